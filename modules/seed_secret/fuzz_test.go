package seedsecret

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// No no_log value reaches stdout, whatever shape the arguments take, also
// from the module's own body, which checks every key before it connects
// (and finds no cluster here).
func FuzzNoLog(f *testing.F) {
	f.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	ansibletest.FuzzNoLog(f, module, map[string]any{"kubeconfig": "/nonexistent/kubeconfig"}, kube.With(run, kube.Connect))
}
