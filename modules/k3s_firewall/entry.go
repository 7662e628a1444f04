package k3sfirewall

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return Run(ctx, req, firewall.ThisHost())
}}
