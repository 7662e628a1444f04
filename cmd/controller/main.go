// Command controller is the controller-side modules in one binary:
// cluster_nodes, flux_instance, flux_operator, flux_status and seed_secret
// share client-go, so one binary serves them all at the size of the
// largest. Each plugins/modules/<name> is a link to it; it runs the module
// Ansible names in the args file.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	clusternodes "github.com/gitops-k3s-flux/k3s_flux/modules/cluster_nodes"
	fluxinstance "github.com/gitops-k3s-flux/k3s_flux/modules/flux_instance"
	fluxoperator "github.com/gitops-k3s-flux/k3s_flux/modules/flux_operator"
	fluxstatus "github.com/gitops-k3s-flux/k3s_flux/modules/flux_status"
	seedsecret "github.com/gitops-k3s-flux/k3s_flux/modules/seed_secret"
)

func main() {
	ansible.MainMulti(map[string]ansible.Entry{
		"cluster_nodes": clusternodes.Entry,
		"flux_instance": fluxinstance.Entry,
		"flux_operator": fluxoperator.Entry,
		"flux_status":   fluxstatus.Entry,
		"seed_secret":   seedsecret.Entry,
	})
}
