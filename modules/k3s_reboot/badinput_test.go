package k3sreboot

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// Each bad value of each option is refused with a message naming it, and
// the module body never runs.
func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{}))
}
