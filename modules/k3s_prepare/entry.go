// Package k3sprepare is module k3s_prepare: it makes a host ready for k3s
// (the memory cgroup, kernel modules, sysctls). Its logic is
// internal/prepare's, which module k3s_node_info's preflight shares. Binary
// cmd/k3s_node serves it.
package k3sprepare

import (
	"context"
	"os/exec"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
	"github.com/gitops-k3s-flux/k3s_flux/internal/prepare"
)

// Entry is the module, bound to this host.
var Entry = ansible.Entry{Module: prepare.Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	node := prepare.Node{Host: preflight.ThisHost(), Modprobe: func(ctx context.Context, module string) error {
		return exec.CommandContext(ctx, "modprobe", module).Run()
	}}
	return node.Run(ctx, req)
}}
