package k3sregistries

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, Entry.Module)
}
