// Package k3sfirewall is the k3s_firewall module, served by the k3s_node
// binary: when ufw or firewalld is active on the node, it allows in what
// k3s needs for the node's role, adding only what is missing.
package k3sfirewall

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return run(ctx, req, firewall.ThisHost())
}}
