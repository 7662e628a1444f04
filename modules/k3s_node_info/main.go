// Command k3s_node_info is the Ansible module that reads k3s on a node: its
// version, its units, and on a server the node token and admin kubeconfig.
package main

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func main() {
	ansible.Main(module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		return run(ctx, req, k3snode.Real{}, k3snode.DefaultPaths)
	})
}
