package k3snodemodule

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs.
func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"role": "server", "version": testVersion}))
}
