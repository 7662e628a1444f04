package k3sconfig

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// A secret under a key misspelt beyond one slip (camelCase, an abbreviation)
// is refused, and never shown: not in msg, not in invocation.
func TestSecretsUnderMisspeltKeysAreMasked(t *testing.T) {
	const s = "misspelt-secret-value-42"
	path := filepath.Join(t.TempDir(), "etc", "rancher", "k3s", "config.yaml")
	res, code, raw := ansibletest.Run(t, Module, Run, map[string]any{"path": path, "role": "server", "config": map[string]any{"agentToken": s}})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "agentToken")
	assert.NotContains(t, raw, s)
	assert.NoFileExists(t, path)

	args := registriesArgsFor(filepath.Join(t.TempDir(), "registries.yaml"))
	args["configs"] = map[string]any{"mirror.example.internal:5000": map[string]any{"auth": map[string]any{"username": "k3s", "passwd": s}}}
	res, code, raw = ansibletest.Run(t, RegistriesModule, RunRegistries, args)
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "passwd")
	assert.NotContains(t, raw, s)
}
