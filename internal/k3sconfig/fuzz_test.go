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

// k3s_registries: no registry credential, TLS key or password in a
// mirror's URL reaches stdout, whatever shape the arguments take, also
// from the module's own body (check mode with diff).
func FuzzRegistriesNoLog(f *testing.F) {
	s := ansibletest.SecretPrefix
	ansibletest.FuzzNoLog(f, RegistriesModule, map[string]any{
		"path":    filepath.Join(f.TempDir(), "registries.yaml"),
		"mirrors": map[string]any{"docker.io": map[string]any{"endpoint": []any{"https://puller:" + s + "Mx@mirror.example:5000"}}},
		"configs": map[string]any{"registry.example:5000": map[string]any{
			"auth": map[string]any{"username": "puller", "password": s + "Px", "auth": s + "Ax", "identity_token": s + "Ix"},
			"tls":  map[string]any{"key": "-----BEGIN EC PRIVATE KEY-----\n" + s + "Kx\n-----END EC PRIVATE KEY-----\n"},
		}},
	}, RunRegistries)
}
