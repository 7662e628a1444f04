package k3sfirewall

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

// module is k3s_firewall.
var module = &ansible.Module{
	Name:             "k3s_firewall",
	ShortDescription: "Open the ports k3s needs in a node's ufw or firewalld, when one is active",
	Description: []string{
		"Reads which host firewall is active: ufw when installed and enabled (C(ENABLED=yes) in C(/etc/ufw/ufw.conf)), its rules read from its own files (C(/etc/ufw/user.rules), C(user6.rules)) without running it; firewalld when C(firewall-cmd --state) says C(running). With neither, changes nothing.",
		"Allows in what k3s documents for the node's role (its Requirements, Inbound Rules for K3s Nodes): on a server the API port (C(api_port), TCP) and, with embedded etcd, 2379-2380/TCP; on every node the kubelet's 10250/TCP, flannel's backend (vxlan 8472/UDP; wireguard-native 51820-51821/UDP) and, with the embedded registry, its peers' 5001/TCP and its API on the supervisor port (C(api_port), on agents too); and everything from the pod and service networks, whose traffic ufw and firewalld would otherwise filter before kube-proxy's rules see it.",
		"Takes only a cluster's networks in C(cluster_cidr) and C(service_cidr): a network with host bits set (C(10.42.0.1/16)) is refused naming the network it is in (C(10.42.0.0/16)), as Python's C(ipaddress) does in strict mode; C(0.0.0.0/0), C(::/0) and any network wider than IPv4 C(/8) or IPv6 C(/48) are refused too. No cluster needs more: kube-controller-manager refuses an IPv6 cluster-cidr wider than C(/48) (its node blocks are C(/64) and at most 16 bits narrower), an IPv4 C(/8) holds 65,536 nodes' C(/24) blocks, and the service-cidr is narrower still; a wider network only opens the host (C(0.0.0.0/0) lets in anyone).",
		"With C(state=present), only what is missing is added, and nothing is removed: ufw's rules are added with C(ufw allow ... comment 'gitops.k3s_flux: <why>'); firewalld's ports go to the default zone and the networks to the C(trusted) zone, both C(--permanent), then C(firewall-cmd --reload).",
		"With C(state=absent) (as playbook reset uses it), the ufw rules this module added, recognised by that comment, are taken out (C(ufw delete ...)), and no other; firewalld keeps no mark of who added a port, so nothing is taken out of it (a warning says so).",
		"Idempotent; C(--check --diff) shows the rules it would add or take out. A Go binary: the node needs no Python (ufw and firewalld are themselves Python programs, run as the host has them).",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Platforms: "linux",
	Examples: `
- name: Open what a server with embedded etcd needs
  gitops.k3s_flux.k3s_firewall:
    role: server
    etcd: true
  become: true

- name: Take out the ufw rules it added, when k3s is gone
  gitops.k3s_flux.k3s_firewall:
    state: absent
  become: true

- name: Open what an agent needs with flannel's wireguard backend and other networks
  gitops.k3s_flux.k3s_firewall:
    role: agent
    flannel_backend: wireguard-native
    cluster_cidr: [10.52.0.0/16]
    service_cidr: [10.53.0.0/16]
  become: true
`,
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "state", Default: "present", Choices: []any{"present", "absent"},
			Description: []string{"C(present) lets in what k3s needs; C(absent) takes out the ufw rules this module added."}},
		{Name: "role", Choices: []any{"server", "agent"}, Description: []string{"What k3s runs as on the node. Required with C(state=present)."}},
		{Name: "etcd", Type: ansible.TypeBool, Default: false, Description: []string{"A server with embedded etcd: 2379-2380/TCP too."}},
		{Name: "flannel_backend", Default: "vxlan", Choices: []any{"vxlan", "wireguard-native", "host-gw", "none"},
			Description: []string{"k3s's C(flannel-backend): C(vxlan) needs 8472/UDP, C(wireguard-native) 51820 and 51821/UDP; C(host-gw) and C(none) no port."}},
		{Name: "api_port", Type: ansible.TypeInt, Default: 6443, Positive: true, Description: []string{"k3s's C(https-listen-port) (the supervisor port), opened on a server, and on every node with C(embedded_registry) (the registry's API listens there)."}},
		{Name: "embedded_registry", Type: ansible.TypeBool, Default: false, Description: []string{"k3s's C(embedded-registry) is on: 5001/TCP too, and C(api_port) on an agent."}},
		{Name: "cluster_cidr", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{"10.42.0.0/16"},
			Description: []string{"The pod networks (k3s's C(cluster-cidr), one entry per address family), allowed in from. Each a network (no host bits set), no wider than IPv4 C(/8) or IPv6 C(/48)."}},
		{Name: "service_cidr", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{"10.43.0.0/16"},
			Description: []string{"The service networks (k3s's C(service-cidr)), allowed in from; the same rules as C(cluster_cidr)."}},
	},
		RequiredIf: []ansible.RequiredIf{{Key: "state", Value: "present", Requirements: []string{"role"}}},
	},
	Returns: []ansible.Return{
		{Name: "firewall", Description: []string{"The active firewall: C(ufw), C(firewalld) or C(none)."}, Returned: "always", Type: "str", Sample: "ufw"},
		{Name: "needed", Description: []string{"What k3s needs allowed in on this node, as ufw writes it."}, Returned: "always", Type: "list",
			Sample: []any{"6443/tcp", "10250/tcp", "8472/udp", "from 10.42.0.0/16", "from 10.43.0.0/16"}},
		{Name: "added", Description: []string{"What was (in check mode: would be) added; empty when the firewall allowed it all or none is active."}, Returned: "always", Type: "list", Sample: []any{"6443/tcp"}},
		{Name: "removed", Description: []string{"The ufw rules taken out (in check mode: that would be), with C(state=absent)."}, Returned: "always", Type: "list", Sample: []any{"allow 6443/tcp"}},
	},
}
