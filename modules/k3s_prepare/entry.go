// Package k3sprepare is module k3s_prepare: it plans what makes a host
// ready for k3s where preflight found it was not (the cgroup words on a
// Raspberry Pi's kernel command line, the kernel modules loaded at boot,
// the forwarding sysctls kept on), then carries the plan out. The plan is
// pure: host reads the files, asks for a plan, and writes it. Binary
// cmd/k3s_node serves it.
package k3sprepare

import (
	"context"
	"os/exec"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// Entry is the module, bound to this host.
var Entry = ansible.Entry{Module: module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	node := host{Host: preflight.ThisHost(), Modprobe: func(ctx context.Context, module string) error {
		return exec.CommandContext(ctx, "modprobe", module).Run()
	}}
	return run(ctx, req, node)
}}
