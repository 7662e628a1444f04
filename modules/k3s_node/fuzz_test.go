package k3snodemodule

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// No no_log value reaches stdout, whatever shape the arguments take. (Only
// the echo body: this module has no no_log option, and its own body would
// reach for systemd.)
func FuzzNoLog(f *testing.F) {
	ansibletest.FuzzNoLog(f, module, nil)
}
