package k3sreboot

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

// module is k3s_reboot.
var module = &ansible.Module{
	Name:             "k3s_reboot",
	ShortDescription: "Reboot a host without Python and wait until it is back with a new boot id",
	Description: []string{
		"Schedules the reboot on the host (C(systemctl reboot) where systemd runs, else C(reboot), as on OpenRC), a second after the module has returned, so that its answer reaches Ansible before the connection goes.",
		"The action plugin then reconnects until the host answers with a boot id (C(/proc/sys/kernel/random/boot_id)) other than the one before, failing after O(reboot_timeout) seconds, naming the host and the last connection error.",
		"Unlike M(ansible.builtin.reboot), nothing on the host needs Python: the module is a Go binary and the wait reads the boot id with C(cat).",
		"In check mode nothing is scheduled and the task reports the reboot it would make (changed).",
		"Role k8s_cluster reboots this way, one host at a time, the hosts C(k8s_cluster_prepare) changed so that their kernel enables the memory cgroup; playbook reboot does a rolling reboot of a cluster's nodes, each drained first.",
	},
	Notes: []string{
		"Not for the Ansible controller itself (a local connection).",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "none",
	Platforms: "linux",
	Examples: `
- name: Reboot the host, one at a time, and wait until it is back
  gitops.k3s_flux.k3s_reboot:
    reboot_timeout: 900
  become: true
  throttle: 1
`,
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "reboot_timeout", Type: ansible.TypeInt, Default: 600, Positive: true,
			Description: []string{"Seconds to wait for the host to come back with a new boot id."}},
	}},
	Returns: []ansible.Return{
		{Name: "rebooted", Description: []string{"Whether the host rebooted (false in check mode)."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "command", Description: []string{"What the reboot was (in check mode: would be) scheduled with."}, Returned: "always", Type: "str", Sample: "systemctl reboot"},
		{Name: "previous_boot_id", Description: []string{"The boot id before the reboot."}, Returned: "always", Type: "str", Sample: "2d5a3c3e-6f1d-4c0e-9a8b-5b1e0d1c2f3a"},
		{Name: "boot_id", Description: []string{"The boot id after the reboot."}, Returned: "when rebooted", Type: "str", Sample: "8e1f0b7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"},
		{Name: "elapsed", Description: []string{"Seconds from the module's start to the host's answer with the new boot id."}, Returned: "when rebooted", Type: "int", Sample: 42},
	},
}
