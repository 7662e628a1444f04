package k3sfirewall

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// No no_log value reaches stdout, whatever shape the arguments take.
func FuzzNoLog(f *testing.F) {
	ansibletest.FuzzNoLog(f, module, nil)
}
