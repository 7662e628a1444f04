package k3sconfig

import (
	"path/filepath"
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// No no_log value, nor a secret flag inside config, reaches stdout,
// whatever shape the arguments take, also from the module's own body (run
// in check mode with diff).
func FuzzNoLog(f *testing.F) {
	s := ansibletest.SecretPrefix
	ansibletest.FuzzNoLog(f, Module, map[string]any{
		"path": filepath.Join(f.TempDir(), "config.yaml"),
		"config": map[string]any{
			"agent-token": s + "Ax", "datastore-endpoint": s + "Bx", "etcd-s3-secret-key": s + "Cx",
			"node-label": []any{"zone=a"},
		},
	}, Run)
}
