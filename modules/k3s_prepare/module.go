package k3sprepare

import (
	"context"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// module is k3s_prepare, served by the k3s_node binary.
var module = &ansible.Module{
	Name:             "k3s_prepare",
	ShortDescription: "Make a host ready for k3s: the memory cgroup on a Raspberry Pi's kernel command line, the kernel modules loaded at boot",
	Description: []string{
		"Without the memory cgroup controller, adds C(cgroup_memory=1 cgroup_enable=memory) to the Raspberry Pi's C(cmdline.txt) (C(/boot/firmware/cmdline.txt) on Pi OS Bookworm and Ubuntu, C(/boot/cmdline.txt) before), once, keeping the rest of its single line; returns C(reboot_required) until the host runs with it.",
		"Fails, changing nothing and asking for no reboot, when a reboot would not bring the memory cgroup: a C(cmdline.txt) whose first line (the only one the firmware reads) is empty or has no C(root=); one with C(cgroup_disable=memory) (remove it, then run again); and a kernel that booted with the cgroup words (its C(/proc/cmdline)) and still lacks it (a kernel built without it). Asking for a reboot then would reboot the host on every run.",
		"Writes C(/etc/modules-load.d/k3s.conf) with the kernel modules k3s needs and loads those not loaded yet (C(modprobe)).",
		"Writes C(/etc/sysctl.d/99-k3s.conf) with C(net.ipv4.ip_forward), C(net.bridge.bridge-nf-call-iptables) and C(net.bridge.bridge-nf-call-ip6tables) at 1, and sets those not set yet: k3s sets them when it starts, but a later C(sysctl --system) (a package upgrade, ufw's reload) would apply a file that turns forwarding off.",
		"Idempotent; C(--check --diff) shows each file's edit. A Go binary: the node needs no Python.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Platforms: "linux",
	Examples: `
- name: Prepare a Raspberry Pi for k3s
  gitops.k3s_flux.k3s_prepare:
  become: true
  register: prepared

- name: Say which host must reboot
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }} must reboot for the memory cgroup"
  when: prepared.reboot_required
`,
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "modules", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: defaultModules(),
			Description: []string{"The kernel modules to load now and at boot."}},
	}},
	Returns: []ansible.Return{
		{Name: "reboot_required", Description: []string{"The kernel runs without the memory cgroup and its command line, as changed now or since the kernel booted, enables it at the next boot. Never true for a kernel that booted with the words and still lacks it: the task fails instead."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "not_prepared", Description: []string{"What preparation cannot do on this host, with what to do by hand."}, Returned: "always", Type: "list", Sample: []any{}},
	},
}

type args struct {
	Modules []string `json:"modules"`
}

// host is how Run reads, writes and runs commands on the host.
type host struct {
	Host     preflight.Host
	Modprobe func(ctx context.Context, module string) error
}

// defaultModules: those k3s needs with flannel's default backend.
func defaultModules() []any {
	var out []any
	for _, m := range preflight.KernelModules("") {
		out = append(out, m)
	}
	return out
}
