package main

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs, no secret in the output.
func TestBadInputs(t *testing.T) {
	base := map[string]any{"role": "server", "token": testToken, "config": map[string]any{"agent-token": testAgentToken}}
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, base), testToken, testAgentToken)
}

func TestRegistriesBadInputsFromSpec(t *testing.T) {
	base := registriesArgsFor("/nonexistent/registries.yaml")
	ansibletest.CheckBadInputs(t, registriesModule, ansibletest.BadInputs(registriesModule, base), testRegistryPassword, testRegistryToken)
}
