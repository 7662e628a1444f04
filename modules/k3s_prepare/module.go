package k3sprepare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// Module is k3s_prepare, served by the k3s_node binary.
var Module = &ansible.Module{
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

// Node is how Run reads, writes and runs commands on the host.
type Node struct {
	Host     preflight.Host
	Modprobe func(ctx context.Context, module string) error
}

// Run plans from what the files say now, then (not in check mode) writes
// each change atomically and loads the modules.
func (n Node) Run(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	files := Files{Cmdline: map[string]string{}}
	for _, path := range preflight.CmdlineFiles {
		if raw, err := os.ReadFile(filepath.Join(n.Host.Root, path)); err == nil {
			files.Cmdline[path] = string(raw)
		}
	}
	if raw, err := os.ReadFile(filepath.Join(n.Host.Root, ModulesLoadFile)); err == nil {
		files.ModulesLoad = string(raw)
	}
	if raw, err := os.ReadFile(filepath.Join(n.Host.Root, SysctlFile)); err == nil {
		files.Sysctl = string(raw)
	}
	if raw, err := os.ReadFile(filepath.Join(n.Host.Root, "/proc/cmdline")); err == nil {
		files.Running = string(raw)
	}
	p, err := Decide(preflight.MemoryCgroupMissing(n.Host), files, a.Modules)
	if err != nil {
		return nil, err
	}
	res := &ansible.Result{Changed: len(p.Changes) > 0}
	res.Set("reboot_required", p.RebootRequired)
	notPrepared := append([]string{}, p.Unfixable...)
	res.Set("not_prepared", notPrepared)
	for _, c := range p.Changes {
		res.Diff = append(res.Diff, ansible.Diff{Before: c.Before, After: c.After, BeforeHeader: c.Path, AfterHeader: c.Path})
	}
	if req.CheckMode {
		return res, nil
	}
	for _, c := range p.Changes {
		if err := atomicfile.Write(filepath.Join(n.Host.Root, c.Path), strings.NewReader(c.After), 0o644); err != nil {
			return res, fmt.Errorf("write %s: %w", c.Path, err)
		}
	}
	// Only what is not loaded or built in: a re-run runs no command.
	for _, m := range a.Modules {
		if n.Host.ModuleLoaded(m) {
			continue
		}
		if err := n.Modprobe(ctx, m); err != nil {
			notPrepared = append(notPrepared, fmt.Sprintf("kernel module %s: modprobe failed (%v): install the kernel's modules package", m, err))
		}
	}
	// After the modules: the bridge's settings exist once br_netfilter is loaded.
	for _, s := range Sysctls {
		path := filepath.Join(n.Host.Root, "/proc/sys", strings.ReplaceAll(s.Key, ".", "/"))
		if raw, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(raw)) == s.Value {
			continue
		}
		if err := os.WriteFile(path, []byte(s.Value+"\n"), 0o644); err != nil {
			notPrepared = append(notPrepared, fmt.Sprintf("sysctl %s: could not be set now (%v); k3s sets it when it starts", s.Key, err))
		}
	}
	res.Set("not_prepared", notPrepared)
	return res, nil
}

// defaultModules: those k3s needs with flannel's default backend.
func defaultModules() []any {
	var out []any
	for _, m := range preflight.KernelModules("") {
		out = append(out, m)
	}
	return out
}
