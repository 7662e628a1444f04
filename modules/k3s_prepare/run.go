// Package k3sprepare is module k3s_prepare: it plans what makes a host
// ready for k3s where preflight found it was not (the cgroup words on a
// Raspberry Pi's kernel command line, the kernel modules loaded at boot,
// the forwarding sysctls kept on), then carries the plan out. The plan is
// pure: Node reads the files, asks for a plan, and writes it. Binary
// cmd/k3s_node serves it.
package k3sprepare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// Cmdline returns content with each of words that its first line lacks
// added at the end of that line (cmdline.txt is one line; the firmware
// ignores the rest), and whether anything was added.
func Cmdline(content string, words []string) (string, bool) {
	first, rest, hasRest := strings.Cut(content, "\n")
	have := strings.Fields(first)
	var add []string
	for _, w := range words {
		if !slices.Contains(have, w) && !slices.Contains(add, w) {
			add = append(add, w)
		}
	}
	if len(add) == 0 {
		return content, false
	}
	line := strings.Join(append(have, add...), " ")
	if !hasRest {
		return line + "\n", true
	}
	return line + "\n" + rest, true
}

// ModulesLoadFile is the modules-load.d file this collection writes.
const ModulesLoadFile = "/etc/modules-load.d/k3s.conf"

// ModulesLoad is that file's content for modules, in the order given.
func ModulesLoad(modules []string) string {
	var b strings.Builder
	b.WriteString("# Written by gitops.k3s_flux: kernel modules k3s needs, loaded at boot.\n")
	for _, m := range modules {
		b.WriteString(m + "\n")
	}
	return b.String()
}

// SysctlFile is the sysctl.d file this collection writes. k3s turns
// forwarding and the bridge's netfilter calls on itself when it starts
// (pkg/agent/syssetup, Configure), but every later `sysctl --system` (a
// package upgrade, ufw's reload) applies the files again: this one keeps
// them on. "99-" sorts it after the distribution's files.
const SysctlFile = "/etc/sysctl.d/99-k3s.conf"

// Sysctl is one kernel setting, as sysctl.d names it.
type Sysctl struct{ Key, Value string }

// Sysctls are those SysctlFile sets.
var Sysctls = []Sysctl{{"net.ipv4.ip_forward", "1"}, {"net.bridge.bridge-nf-call-iptables", "1"}, {"net.bridge.bridge-nf-call-ip6tables", "1"}}

// SysctlConf is that file's content.
func SysctlConf() string {
	var b strings.Builder
	b.WriteString("# Written by gitops.k3s_flux: what k3s sets when it starts, kept on by every sysctl --system.\n")
	for _, s := range Sysctls {
		b.WriteString(s.Key + " = " + s.Value + "\n")
	}
	return b.String()
}

// Change is one file preparation writes: its content before ("" when
// missing) and after.
type Change struct {
	Path, Before, After string
}

// Plan is what preparing a host does.
type Plan struct {
	Changes []Change
	// RebootRequired: the kernel runs without the memory cgroup, and its
	// command line (as changed, or as an earlier run changed it) fixes
	// that at the next boot.
	RebootRequired bool
	// Unfixable names what preparation cannot do here (a PC's GRUB).
	Unfixable []string
}

// Files is what Decide reads: each cmdline.txt that exists (by path), the
// modules-load.d and sysctl.d files ("" when missing), and the command
// line the running kernel booted with (/proc/cmdline).
type Files struct {
	Cmdline     map[string]string
	ModulesLoad string
	Sysctl      string
	Running     string
}

// Decide plans the cmdline.txt edit when the memory cgroup is missing
// (the first of preflight.CmdlineFiles that exists; none: GRUB, by hand),
// the modules-load.d file listing modules, and the sysctl.d file. When a
// reboot would not bring the memory cgroup (cmdline.txt is not a command
// line, or already asks for it in vain), it says why and plans nothing:
// asking for a reboot then would reboot the host on every run.
func Decide(memoryMissing bool, f Files, modules []string) (Plan, error) {
	var p Plan
	if memoryMissing {
		edited := false
		for _, path := range preflight.CmdlineFiles {
			content, ok := f.Cmdline[path]
			if !ok {
				continue
			}
			if err := cmdlineRefusal(path, content, f.Running); err != nil {
				return Plan{}, err
			}
			if after, changed := Cmdline(content, preflight.CgroupWords); changed {
				p.Changes = append(p.Changes, Change{Path: path, Before: content, After: after})
			}
			edited = true
			break
		}
		if edited {
			p.RebootRequired = true
		} else {
			p.Unfixable = append(p.Unfixable, "the memory cgroup: no Raspberry Pi cmdline.txt here; add \"cgroup_memory=1 cgroup_enable=memory\" to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub and reboot")
		}
	}
	if want := ModulesLoad(modules); len(modules) > 0 && f.ModulesLoad != want {
		p.Changes = append(p.Changes, Change{Path: ModulesLoadFile, Before: f.ModulesLoad, After: want})
	}
	if want := SysctlConf(); f.Sysctl != want {
		p.Changes = append(p.Changes, Change{Path: SysctlFile, Before: f.Sysctl, After: want})
	}
	return p, nil
}

// cmdlineRefusal says why cmdline.txt at path (content) cannot bring the
// memory cgroup the running kernel (booted with running) lacks: the
// firmware reads only its first line, which must be the kernel's command
// line (root= on it); cgroup_disable=memory there keeps the cgroup off;
// a kernel that booted with the cgroup asked for and still lacks it
// lacks it for good.
func cmdlineRefusal(path, content, running string) error {
	first, _, _ := strings.Cut(content, "\n")
	words := strings.Fields(first)
	switch {
	case len(words) == 0:
		return fmt.Errorf("%s: its first line is empty, and the firmware reads only the first line as the kernel's command line (the words added there would be all of it): put the command line (console=... root=... rootwait) back on the first line; nothing was changed", path)
	case !slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "root=") }):
		return fmt.Errorf("%s: its first line has no root=, so it is not the kernel's command line the firmware reads (only the first line counts): put the command line (console=... root=... rootwait) on the first line; nothing was changed", path)
	case slices.Contains(words, cgroupDisable):
		return fmt.Errorf("%s has %s, which keeps the memory cgroup off (k3s cannot run without it): remove it and run this again, which then asks for the reboot; nothing was changed", path, cgroupDisable)
	case hasAll(words, preflight.CgroupWords) && bootedWith(words, strings.Fields(running)):
		return fmt.Errorf("the kernel does not offer the memory cgroup although %s asks for it (%s) and the kernel booted with that (/proc/cmdline): k3s cannot run without it, and a reboot would not bring it; use a kernel built with the memory cgroup (CONFIG_MEMCG), such as the distribution's own; nothing was changed", path, strings.Join(preflight.CgroupWords, " "))
	}
	return nil
}

const cgroupDisable = "cgroup_disable=memory"

func hasAll(words, want []string) bool {
	return !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(words, w) })
}

// bootedWith says whether the kernel booted (with booted) asking for the
// memory cgroup as cmdline.txt's words do now: its cgroup words all there
// (the firmware rewrites others, console=serial0), the cgroup enabled
// after any cgroup_disable=memory (the firmware's own, put in front; or
// one removed from cmdline.txt since, which a reboot drops).
func bootedWith(words, booted []string) bool {
	for _, w := range words {
		if strings.HasPrefix(w, "cgroup") && !slices.Contains(booted, w) {
			return false
		}
	}
	return hasAll(booted, preflight.CgroupWords) && lastIndex(booted, "cgroup_enable=memory") > lastIndex(booted, cgroupDisable)
}

func lastIndex(words []string, w string) int {
	for i := len(words) - 1; i >= 0; i-- {
		if words[i] == w {
			return i
		}
	}
	return -1
}
