// Command k3s_node is the Ansible modules that change a node: k3s_node
// installs k3s and keeps its service enabled, active and answering;
// k3s_prepare makes the host ready for it; k3s_firewall opens its ports;
// k3s_reboot reboots it; k3s_etcd_snapshot takes an etcd snapshot and
// k3s_etcd_restore does a server's step of restoring one; k3s_manifest keeps
// a manifest k3s deploys. One
// binary, so that a node receives one.
package main

import (
	"context"
	"os/exec"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
	"github.com/gitops-k3s-flux/k3s_flux/internal/prepare"
	k3setcdrestore "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_etcd_restore"
	k3setcdsnapshot "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_etcd_snapshot"
	k3sfirewall "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_firewall"
	k3smanifest "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_manifest"
	k3sreboot "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_reboot"
)

func main() {
	node := prepare.Node{Host: preflight.ThisHost(), Modprobe: func(ctx context.Context, module string) error {
		return exec.CommandContext(ctx, "modprobe", module).Run()
	}}
	ansible.MainMulti(map[string]ansible.Entry{
		"k3s_node":    {Module: module, Run: k3snode.With(run)},
		"k3s_prepare": {Module: prepare.Module, Run: node.Run},
		"k3s_reboot":  {Module: k3sreboot.Module, Run: k3sreboot.ThisNode.Run},
		"k3s_firewall": {Module: k3sfirewall.Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return k3sfirewall.Run(ctx, req, firewall.ThisHost())
		}},
		"k3s_etcd_snapshot": {Module: k3setcdsnapshot.Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return k3setcdsnapshot.Run(ctx, req, k3setcdsnapshot.ThisHost)
		}},
		"k3s_manifest": {Module: k3smanifest.Module, Run: k3smanifest.Run},
		"k3s_etcd_restore": {Module: k3setcdrestore.Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return k3setcdrestore.Run(ctx, req, k3setcdrestore.ThisHost)
		}},
	})
}
