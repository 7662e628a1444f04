package fluxoperator

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs, the registry password never in the output.
func TestBadInputs(t *testing.T) {
	const password = "bad-input-registry-password"
	base := map[string]any{"chart_version": "0.59.0", "registry_username": "u", "registry_password": password}
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, base), password)
}
