package k3sprepare

import (
	"context"
	"os/exec"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// Entry is the module, bound to this host.
var Entry = ansible.Entry{Module: Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	node := Node{Host: preflight.ThisHost(), Modprobe: func(ctx context.Context, module string) error {
		return exec.CommandContext(ctx, "modprobe", module).Run()
	}}
	return node.Run(ctx, req)
}}
