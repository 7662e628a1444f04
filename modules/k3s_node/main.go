// Command k3s_node is the Ansible module that installs k3s on a node and
// keeps its service enabled, active and answering.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func main() {
	ansible.Main(module, k3snode.With(run))
}
