package fluxinstance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs.
func TestBadInputs(t *testing.T) {
	src := filepath.Join(t.TempDir(), "cluster.yaml")
	require.NoError(t, os.WriteFile(src, []byte("kind: FluxInstance\n"), 0o600))
	withDefinition := map[string]any{"definition": map[string]any{"kind": "FluxInstance"}, "require_secrets": []any{"flux-system/git-deploy-key"}}
	withSrc := map[string]any{"src": src}
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, withDefinition, withSrc))
}
