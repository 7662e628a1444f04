package k3sprepare

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, Entry.Module)
}
