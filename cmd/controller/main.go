// Command controller is the controller-side modules in one binary:
// cluster_nodes_info, flux_instance, flux_operator, flux_repo_check,
// flux_status_info, k3s_kubeconfig, node_drain and seed_secret share
// client-go and kustomize, so one binary serves them all at the size of the
// largest. It runs the module Ansible names in the args file.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	clusternodes "github.com/gitops-k3s-flux/k3s_flux/modules/cluster_nodes_info"
	fluxinstance "github.com/gitops-k3s-flux/k3s_flux/modules/flux_instance"
	fluxoperator "github.com/gitops-k3s-flux/k3s_flux/modules/flux_operator"
	fluxrepocheck "github.com/gitops-k3s-flux/k3s_flux/modules/flux_repo_check"
	fluxstatus "github.com/gitops-k3s-flux/k3s_flux/modules/flux_status_info"
	k3skubeconfig "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_kubeconfig"
	nodedrain "github.com/gitops-k3s-flux/k3s_flux/modules/node_drain"
	seedsecret "github.com/gitops-k3s-flux/k3s_flux/modules/seed_secret"
)

// entries are the modules this binary serves (internal/registry lists them).
var entries = map[string]ansible.Entry{
	"cluster_nodes_info": clusternodes.Entry,
	"flux_instance":      fluxinstance.Entry,
	"flux_operator":      fluxoperator.Entry,
	"flux_repo_check":    fluxrepocheck.Entry,
	"flux_status_info":   fluxstatus.Entry,
	"k3s_kubeconfig":     k3skubeconfig.Entry,
	"node_drain":         nodedrain.Entry,
	"seed_secret":        seedsecret.Entry,
	// The names before 0.1.0 (meta/runtime.yml redirects them): a task written with one
	// sends it as the module's name.
	"cluster_nodes": clusternodes.Entry,
	"flux_status":   fluxstatus.Entry,
}

func main() {
	ansible.MainMulti(entries)
}
