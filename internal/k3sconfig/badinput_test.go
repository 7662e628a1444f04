package k3sconfig

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs, no secret in the output.
func TestBadInputs(t *testing.T) {
	base := map[string]any{"role": "server", "token": testToken, "config": map[string]any{"agent-token": testAgentToken}}
	ansibletest.CheckBadInputs(t, Module, ansibletest.BadInputs(Module, base), testToken, testAgentToken)
}

func TestRegistriesBadInputsFromSpec(t *testing.T) {
	base := registriesArgsFor("/nonexistent/registries.yaml")
	ansibletest.CheckBadInputs(t, RegistriesModule, ansibletest.BadInputs(RegistriesModule, base), testRegistryPassword, testRegistryToken)
}
