// Package fluxoperator is the Ansible module that installs the Flux
// Operator Helm chart with the Helm SDK.
package fluxoperator

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Entry is the module with the real Helm SDK and cluster, for the
// controller-side binary (cmd/controller).
var Entry = ansible.Entry{Module: module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return run(ctx, req, newHelm)
}}
