// Command k3s_node_info is the Ansible module that reads k3s on a node: its
// version, its units, and on a server the node token and admin kubeconfig.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func main() {
	ansible.Main(module, k3snode.With(run))
}
