// Command k3s_node is the Ansible modules that read and change a node, one
// binary so that a node receives one: k3s_node_info reads k3s there and
// checks the host before an install (the role's first task on every host);
// k3s_node installs k3s and keeps its service enabled, active and
// answering; k3s_prepare makes the host ready for it;
// k3s_firewall opens its ports; k3s_reboot reboots it; k3s_etcd_snapshot
// takes an etcd snapshot and k3s_etcd_restore does a server's step of
// restoring one; k3s_manifest keeps a manifest k3s deploys.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	k3setcdrestore "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_etcd_restore"
	k3setcdsnapshot "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_etcd_snapshot"
	k3sfirewall "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_firewall"
	k3smanifest "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_manifest"
	k3snodemodule "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_node"
	k3snodeinfo "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_node_info"
	k3sprepare "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_prepare"
	k3sreboot "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_reboot"
)

// entries are the modules this binary serves (internal/registry lists them).
var entries = map[string]ansible.Entry{
	"k3s_node":          k3snodemodule.Entry,
	"k3s_node_info":     k3snodeinfo.Entry,
	"k3s_prepare":       k3sprepare.Entry,
	"k3s_reboot":        k3sreboot.Entry,
	"k3s_firewall":      k3sfirewall.Entry,
	"k3s_etcd_snapshot": k3setcdsnapshot.Entry,
	"k3s_manifest":      k3smanifest.Entry,
	"k3s_etcd_restore":  k3setcdrestore.Entry,
}

func main() {
	ansible.MainMulti(entries)
}
