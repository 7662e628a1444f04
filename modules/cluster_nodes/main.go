// Command cluster_nodes is the Ansible module that waits for the cluster's
// Nodes to be Ready and reports them.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

func main() { ansible.Main(module, kube.With(run, kube.Connect)) }
