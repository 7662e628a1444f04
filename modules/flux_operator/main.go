// Command flux_operator is the Ansible module that installs the Flux
// Operator Helm chart with the Helm SDK.
package main

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

func main() { ansible.Main(module, runReal) }

// runReal is the module with the real Helm SDK configuration and cluster.
func runReal(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return run(ctx, req, newHelm)
}
