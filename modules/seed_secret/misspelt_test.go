package seedsecret

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

// A secret under a key misspelt beyond one slip (the spelling of the key it
// is stored under, camelCase) is refused, and never shown: not in msg, not
// in invocation.
func TestSecretsUnderMisspeltKeysAreMasked(t *testing.T) {
	const s = "misspelt-client-secret-value"
	for name, secret := range map[string]map[string]any{
		"universal_auth.clientSecret": {"name": "auth", "namespace": "platform", "universal_auth": map[string]any{"client_id": "id-1234", "clientSecret": s}},
		"stringData":                  {"name": "auth", "namespace": "platform", "stringData": map[string]any{"clientSecret": s}},
		"string_data.password beside": {"name": "auth", "namespace": "platform", "git_https": map[string]any{"username": "git", "passWord": s}},
	} {
		res, code, raw := ansibletest.Run(t, module, kube.With(run, kubetest.New().Connector()), map[string]any{"secrets": []any{secret}, "_ansible_verbosity": 3})
		assert.Equal(t, 1, code, name)
		assert.Contains(t, res["msg"], "nsupported", name)
		assert.NotContains(t, raw, s, name)
	}
}
