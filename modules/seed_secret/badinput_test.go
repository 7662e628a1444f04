package seedsecret

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Every option's bad values, sub-options included, made from the spec: a
// clear msg naming the option, the body never runs, no secret in the
// output.
func TestBadInputs(t *testing.T) {
	const value, key = "bad-input-client-secret", "AGE-SECRET-KEY-1BADINPUTBADINPUT"
	keyFile := filepath.Join(t.TempDir(), "id")
	require.NoError(t, os.WriteFile(keyFile, []byte("not read: the body never runs"), 0o600))
	generic := map[string]any{"namespaces": []any{"platform"}, "secrets": []any{map[string]any{"name": "infisical-universal-auth", "namespace": "platform",
		"string_data": map[string]any{"clientSecret": value}}}}
	deployKey := map[string]any{"secrets": []any{map[string]any{"name": "git-deploy-key", "namespace": "flux-system",
		"git_deploy_key": map[string]any{"private_key_file": keyFile, "github_meta_file": keyFile}}}}
	age := map[string]any{"secrets": []any{map[string]any{"name": "sops-age", "namespace": "flux-system", "age_key": map[string]any{"key": key}}}}
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, generic, deployKey, age), value, key)
}
