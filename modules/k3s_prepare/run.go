package k3sprepare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// cmdline returns content with each of words that its first line lacks
// added at the end of that line (cmdline.txt is one line; the firmware
// ignores the rest), and whether anything was added.
func cmdline(content string, words []string) (string, bool) {
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

// modulesLoadFile is the modules-load.d file this collection writes.
const modulesLoadFile = "/etc/modules-load.d/k3s.conf"

// modulesLoad is that file's content for modules, in the order given.
func modulesLoad(modules []string) string {
	var b strings.Builder
	b.WriteString("# Written by gitops.k3s_flux: kernel modules k3s needs, loaded at boot.\n")
	for _, m := range modules {
		b.WriteString(m + "\n")
	}
	return b.String()
}

// sysctlFile is the sysctl.d file this collection writes. k3s turns
// forwarding and the bridge's netfilter calls on itself when it starts
// (pkg/agent/syssetup, Configure), but every later `sysctl --system` (a
// package upgrade, ufw's reload) applies the files again: this one keeps
// them on. "99-" sorts it after the distribution's files.
const sysctlFile = "/etc/sysctl.d/99-k3s.conf"

// sysctl is one kernel setting, as sysctl.d names it.
type sysctl struct{ Key, Value string }

// sysctls are those SysctlFile sets.
var sysctls = []sysctl{{"net.ipv4.ip_forward", "1"}, {"net.bridge.bridge-nf-call-iptables", "1"}, {"net.bridge.bridge-nf-call-ip6tables", "1"}}

// sysctlConf is that file's content.
func sysctlConf() string {
	var b strings.Builder
	b.WriteString("# Written by gitops.k3s_flux: what k3s sets when it starts, kept on by every sysctl --system.\n")
	for _, s := range sysctls {
		b.WriteString(s.Key + " = " + s.Value + "\n")
	}
	return b.String()
}

// change is one file preparation writes: its content before ("" when
// missing) and after.
type change struct {
	Path, Before, After string
}

// plan is what preparing a host does.
type plan struct {
	Changes []change
	// RebootRequired: the kernel runs without the memory cgroup, and its
	// command line (as changed, or as an earlier run changed it) fixes
	// that at the next boot.
	RebootRequired bool
	// Unfixable names what preparation cannot do here (a PC's GRUB).
	Unfixable []string
}

// files is what Decide reads: each cmdline.txt that exists (by path), the
// modules-load.d and sysctl.d files ("" when missing), and the command
// line the running kernel booted with (/proc/cmdline).
type files struct {
	Cmdline     map[string]string
	ModulesLoad string
	Sysctl      string
	Running     string
}

// decide plans the cmdline.txt edit when the memory cgroup is missing
// (the first of preflight.CmdlineFiles that exists; none: GRUB, by hand),
// the modules-load.d file listing modules, and the sysctl.d file. When a
// reboot would not bring the memory cgroup (cmdline.txt is not a command
// line, or already asks for it in vain), it says why and plans nothing:
// asking for a reboot then would reboot the host on every run.
func decide(memoryMissing bool, f files, modules []string) (plan, error) {
	var p plan
	if memoryMissing {
		edited := false
		for _, path := range preflight.CmdlineFiles {
			content, ok := f.Cmdline[path]
			if !ok {
				continue
			}
			if err := cmdlineRefusal(path, content, f.Running); err != nil {
				return plan{}, err
			}
			if after, changed := cmdline(content, preflight.CgroupWords); changed {
				p.Changes = append(p.Changes, change{Path: path, Before: content, After: after})
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
	if want := modulesLoad(modules); len(modules) > 0 && f.ModulesLoad != want {
		p.Changes = append(p.Changes, change{Path: modulesLoadFile, Before: f.ModulesLoad, After: want})
	}
	if want := sysctlConf(); f.Sysctl != want {
		p.Changes = append(p.Changes, change{Path: sysctlFile, Before: f.Sysctl, After: want})
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

// run plans from what the files say now, then (not in check mode) writes
// each change atomically and loads the modules.
func run(ctx context.Context, req *ansible.Request, n host) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	files := files{Cmdline: map[string]string{}}
	for _, path := range preflight.CmdlineFiles {
		if raw, err := os.ReadFile(filepath.Join(n.Host.Root, path)); err == nil {
			files.Cmdline[path] = string(raw)
		}
	}
	if raw, err := os.ReadFile(filepath.Join(n.Host.Root, modulesLoadFile)); err == nil {
		files.ModulesLoad = string(raw)
	}
	if raw, err := os.ReadFile(filepath.Join(n.Host.Root, sysctlFile)); err == nil {
		files.Sysctl = string(raw)
	}
	if raw, err := os.ReadFile(filepath.Join(n.Host.Root, "/proc/cmdline")); err == nil {
		files.Running = string(raw)
	}
	p, err := decide(preflight.MemoryCgroupMissing(n.Host), files, a.Modules)
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
	for _, s := range sysctls {
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
