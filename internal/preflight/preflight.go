// Package preflight reads whether a host is ready for k3s, changing
// nothing: the kernel features k3s needs, the tools its install script
// needs, free space and free ports. Each finding names what was seen and
// the fix. Every check reads files under Host.Root, so that tests can lay
// out a host's /proc, /sys and /boot in a directory.
package preflight

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

// Severity of a finding: an error stops a strict run (k3s would not work),
// a warning is reported only.
const (
	Error   = "error"
	Warning = "warning"
)

// Finding is one thing that is not ready.
type Finding struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Seen     string `json:"seen"`
	Fix      string `json:"fix"`
}

// Want is what the host will run.
type Want struct {
	Role           string // server or agent
	Etcd           bool   // a server with embedded etcd (cluster-init, or joining one)
	FlannelBackend string // k3s's flannel-backend: vxlan unless set
	InstallSource  string // script or airgap
	DataDir        string
	APIPort        int
	// K3sRunning: a k3s unit is active, so a port whose holder cannot be
	// read (without root, another user's process) is taken to be its own.
	K3sRunning bool
	// What the host firewall must let in besides the ports above.
	EmbeddedRegistry bool
	ClusterCIDRs     []string
	ServiceCIDRs     []string
	// FirewallOpened: the ports are opened next (module k3s_firewall, as
	// role k8s_cluster does), so a closed one is a warning.
	FirewallOpened bool
}

// Host is how the checks see the machine.
type Host struct {
	Root     string                                     // "/" on a node
	LookPath func(name string) (string, error)          // exec.LookPath on a node
	FreeDisk func(path string) (free uint64, err error) // statfs's available bytes
	Release  string                                     // uname -r
	// Firewall reads the active host firewall; nil: not checked.
	Firewall func() (firewall.State, error)
}

// ThisHost is the machine the binary runs on.
func ThisHost() Host {
	release := ""
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		release = strings.TrimSpace(string(raw))
	}
	return Host{Root: "/", LookPath: exec.LookPath, FreeDisk: freeDisk, Release: release, Firewall: func() (firewall.State, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return firewall.Read(ctx, firewall.ThisHost())
	}}
}

func freeDisk(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

func (h Host) read(p string) (string, bool) {
	raw, err := os.ReadFile(h.path(p))
	return string(raw), err == nil
}

func (h Host) exists(p string) bool {
	_, err := os.Stat(h.path(p))
	return err == nil
}

// Check runs every check that applies to want.
func Check(h Host, want Want) []Finding {
	var out []Finding
	out = append(out, memoryCgroup(h)...)
	out = append(out, kernelModules(h, want)...)
	out = append(out, forwarding(h)...)
	out = append(out, swap(h)...)
	out = append(out, tools(h, want)...)
	out = append(out, disk(h, want)...)
	out = append(out, ports(h, want)...)
	out = append(out, firewallRules(h, want)...)
	return out
}

// RebootPending is findings for a host whose kernel command line
// preparation has set (or would set, in check mode) and that reboots before
// k3s is installed: the missing memory cgroup is a warning, fixed by that
// reboot.
func RebootPending(findings []Finding) []Finding {
	out := make([]Finding, 0, len(findings))
	for _, f := range findings {
		if f.Check == memoryCgroupCheck {
			f.Severity = Warning
			f.Fix = "none by hand: the kernel command line as prepared enables it, and the host reboots before k3s is installed"
		}
		out = append(out, f)
	}
	return out
}

// MemoryCgroupMissing says whether the kernel runs without the memory
// cgroup controller (what preparation fixes on a Pi).
func MemoryCgroupMissing(h Host) bool { return len(memoryCgroup(h)) > 0 }

const memoryCgroupCheck = "memory cgroup"

// memoryCgroup: k3s will not start without the memory controller (its
// check in pkg/cgroups; the install script's hint names cmdline.txt).
func memoryCgroup(h Host) []Finding {
	if controllers, ok := h.read("/sys/fs/cgroup/cgroup.controllers"); ok {
		if slices.Contains(strings.Fields(controllers), "memory") {
			return nil
		}
		return []Finding{{Check: memoryCgroupCheck, Severity: Error, Seen: "cgroup v2 without the memory controller (/sys/fs/cgroup/cgroup.controllers: " + strings.TrimSpace(controllers) + ")", Fix: cmdlineFix(h)}}
	}
	cgroups, ok := h.read("/proc/cgroups")
	if !ok {
		return []Finding{{Check: memoryCgroupCheck, Severity: Error, Seen: "neither /sys/fs/cgroup/cgroup.controllers nor /proc/cgroups can be read", Fix: "a kernel with cgroups (v2 preferred) mounted at /sys/fs/cgroup"}}
	}
	for _, line := range strings.Split(cgroups, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "memory" {
			if f[3] == "1" {
				return nil
			}
			return []Finding{{Check: memoryCgroupCheck, Severity: Error, Seen: "cgroup v1 with the memory controller disabled (/proc/cgroups)", Fix: cmdlineFix(h)}}
		}
	}
	return []Finding{{Check: memoryCgroupCheck, Severity: Error, Seen: "no memory controller in /proc/cgroups", Fix: cmdlineFix(h)}}
}

// CgroupWords are what a Raspberry Pi's kernel needs for the memory
// cgroup controller (k3s's install script names them).
var CgroupWords = []string{"cgroup_memory=1", "cgroup_enable=memory"}

// CmdlineFiles are where a Pi keeps its kernel command line, in the order
// to look: /boot/firmware since Pi OS Bookworm and on Ubuntu, /boot before.
var CmdlineFiles = []string{"/boot/firmware/cmdline.txt", "/boot/cmdline.txt"}

// cmdlineFix says where the kernel's command line is on this host: the
// first of CmdlineFiles that exists, else GRUB's.
func cmdlineFix(h Host) string {
	words := strings.Join(CgroupWords, " ")
	for _, f := range CmdlineFiles {
		if h.exists(f) {
			return fmt.Sprintf("add %q at the end of the single line in %s, then reboot", words, f)
		}
	}
	return fmt.Sprintf("add %q to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, then reboot", words)
}

// KernelModules are the modules k3s needs with flannel's backend ("" is
// k3s's default, vxlan): overlay (containerd's snapshotter), br_netfilter
// (pod traffic through iptables) and, for vxlan, vxlan.
func KernelModules(flannelBackend string) []string {
	needed := []string{"overlay", "br_netfilter"}
	if flannelBackend == "" || flannelBackend == "vxlan" {
		needed = append(needed, "vxlan")
	}
	return needed
}

// kernelModules: overlay (containerd's snapshotter), br_netfilter (pod
// traffic through iptables) and, for flannel's vxlan backend, vxlan; each
// loaded, built in, or loadable.
func kernelModules(h Host, want Want) []Finding {
	var out []Finding
	for _, m := range KernelModules(want.FlannelBackend) {
		if h.moduleAvailable(m) {
			continue
		}
		fix := fmt.Sprintf("install the kernel's modules package so that modprobe %s works, then list %s in /etc/modules-load.d/k3s.conf so that it loads at boot", m, m)
		if m == "vxlan" && h.ubuntuOnPi() {
			fix = "install linux-modules-extra-raspi (Ubuntu keeps vxlan there on a Raspberry Pi), then reboot"
		}
		out = append(out, Finding{Check: "kernel module " + m, Severity: Error, Seen: fmt.Sprintf("%s is neither loaded, built in, nor in /lib/modules/%s", m, h.Release), Fix: fix})
	}
	return out
}

// moduleAvailable: loaded or built in (ModuleLoaded), or in the running
// kernel's modules.dep or modules.builtin.
func (h Host) moduleAvailable(m string) bool {
	if h.ModuleLoaded(m) {
		return true
	}
	for _, list := range []string{"modules.dep", "modules.builtin"} {
		raw, ok := h.read(filepath.Join("/lib/modules", h.Release, list))
		if !ok {
			continue
		}
		for _, line := range strings.Split(raw, "\n") {
			file, _, _ := strings.Cut(line, ":")
			base := filepath.Base(file)
			if name, _, _ := strings.Cut(base, ".ko"); strings.HasSuffix(base, ".ko") || strings.Contains(base, ".ko.") {
				if strings.ReplaceAll(name, "-", "_") == m {
					return true
				}
			}
		}
	}
	return false
}

// ModuleLoaded says whether kernel module m is loaded or built in (what
// preparation need not load): in /proc/modules or /sys/module (loaded, or
// built in with parameters), or shown by what it provides (built in
// without).
func (h Host) ModuleLoaded(m string) bool {
	if mods, ok := h.read("/proc/modules"); ok {
		for _, line := range strings.Split(mods, "\n") {
			if strings.HasPrefix(line, m+" ") {
				return true
			}
		}
	}
	if h.exists("/sys/module/" + m) {
		return true
	}
	switch m {
	case "br_netfilter":
		return h.exists("/proc/sys/net/bridge/bridge-nf-call-iptables")
	case "overlay":
		fs, ok := h.read("/proc/filesystems")
		return ok && slices.Contains(strings.Fields(fs), "overlay")
	}
	return false
}

func (h Host) ubuntuOnPi() bool {
	osRelease, _ := h.read("/etc/os-release")
	model, _ := h.read("/proc/device-tree/model")
	return strings.Contains(osRelease, "ID=ubuntu") && strings.Contains(model, "Raspberry Pi")
}

// sysctlDirs are where sysctl --system and systemd-sysctl read *.conf, a
// file name found in an earlier one hiding the same name in a later one.
var sysctlDirs = []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}

// lastSysctl is the last setting of any of keys in the sysctl files, in
// the order they are applied (by file name; /etc/sysctl.conf last, unless
// a link in /etc/sysctl.d reads it earlier, as Debian's 99-sysctl.conf).
func (h Host) lastSysctl(keys ...string) (file, line, value string) {
	byName := map[string]string{}
	for _, dir := range sysctlDirs {
		entries, _ := os.ReadDir(h.path(dir))
		for _, e := range entries {
			if _, seen := byName[e.Name()]; !seen && strings.HasSuffix(e.Name(), ".conf") {
				byName[e.Name()] = filepath.Join(dir, e.Name())
			}
		}
	}
	names := slices.Sorted(maps.Keys(byName))
	files := make([]string, 0, len(names)+1)
	readConf := false
	for _, n := range names {
		files = append(files, byName[n])
		if target, err := filepath.EvalSymlinks(h.path(byName[n])); err == nil && target == h.path("/etc/sysctl.conf") {
			readConf = true
		}
	}
	if !readConf {
		files = append(files, "/etc/sysctl.conf")
	}
	for _, f := range files {
		content, _ := h.read(f)
		for _, l := range strings.Split(content, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
			key := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(k), "-"), "/", ".")
			if ok && slices.Contains(keys, key) {
				file, line, value = f, strings.TrimSpace(l), strings.TrimSpace(v)
			}
		}
	}
	return file, line, value
}

// forwarding: k3s turns IPv4 forwarding on when it starts (its
// pkg/agent/syssetup), so it being off now is no fault; but a sysctl file
// that turns it off is applied again by every later sysctl --system (a
// package upgrade, ufw's reload), and pods then lose their traffic.
func forwarding(h Host) []Finding {
	file, line, value := h.lastSysctl("net.ipv4.ip_forward", "net.ipv4.conf.all.forwarding")
	if value != "0" {
		return nil
	}
	return []Finding{{Check: "ip forwarding", Severity: Warning, Seen: fmt.Sprintf("%s sets %q", file, line),
		Fix: "remove that line: k3s turns forwarding on when it starts, but every later sysctl --system turns it off again and pods lose their traffic (k8s_cluster_prepare writes /etc/sysctl.d/99-k3s.conf, which keeps it on unless a file sorted after it turns it off)"}}
}

// swap: k3s runs with swap (it turns the kubelet's failSwapOn off), but
// memory limits do not hold against it.
func swap(h Host) []Finding {
	swaps, ok := h.read("/proc/swaps")
	if !ok {
		return nil
	}
	var on []string
	for _, line := range strings.Split(swaps, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			on = append(on, f[0])
		}
	}
	if len(on) == 0 {
		return nil
	}
	return []Finding{{Check: "swap", Severity: Warning, Seen: "swap is on: " + strings.Join(on, ", "),
		Fix: "k3s runs with it, but memory limits do not count swap: swapoff -a and remove it from /etc/fstab (on Pi OS: dphys-swapfile swapoff, systemctl disable dphys-swapfile)"}}
}

// tools the install script needs (its verify_system and download): systemd
// or OpenRC, curl or wget (not for an airgap install), sha256sum.
func tools(h Host, want Want) []Finding {
	var out []Finding
	has := func(names ...string) bool {
		for _, n := range names {
			if _, err := h.LookPath(n); err == nil {
				return true
			}
		}
		return false
	}
	if !has("systemctl", "openrc-run") {
		out = append(out, Finding{Check: "init system", Severity: Error, Seen: "neither systemctl nor openrc-run on PATH", Fix: "k3s's install script needs systemd or OpenRC to run k3s as a service"})
	}
	if want.InstallSource != "airgap" && !has("curl", "wget") {
		out = append(out, Finding{Check: "download tool", Severity: Error, Seen: "neither curl nor wget on PATH", Fix: "install curl (apt install curl), or install from airgap files (k8s_cluster_install_source: airgap)"})
	}
	if !has("sha256sum") {
		out = append(out, Finding{Check: "sha256sum", Severity: Error, Seen: "sha256sum is not on PATH", Fix: "install coreutils: k3s's install script checks what it downloads with sha256sum"})
	}
	return out
}

// Free space under the data directory: k3s unpacks itself and its images
// there (about 1 GiB), and the kubelet evicts pods when it runs short.
const (
	minFree  = 1 << 30
	warnFree = 4 << 30
)

func disk(h Host, want Want) []Finding {
	dir := want.DataDir
	for dir != "/" && !h.exists(dir) {
		dir = filepath.Dir(dir)
	}
	free, err := h.FreeDisk(h.path(dir))
	if err != nil {
		return []Finding{{Check: "free space", Severity: Warning, Seen: fmt.Sprintf("free space under %s could not be read: %v", dir, err), Fix: "make sure " + want.DataDir + " has at least 4 GiB free"}}
	}
	gib := fmt.Sprintf("%.1f GiB free under %s (for %s)", float64(free)/(1<<30), dir, want.DataDir)
	switch {
	case free < minFree:
		return []Finding{{Check: "free space", Severity: Error, Seen: gib, Fix: "k3s needs about 1 GiB to unpack itself and its images: free space there, or point data-dir at a larger disk"}}
	case free < warnFree:
		return []Finding{{Check: "free space", Severity: Warning, Seen: gib, Fix: "images fill it soon, and the kubelet evicts pods when it runs short: 4 GiB or more is safer"}}
	}
	return nil
}

// ports k3s listens on, by role: the API (and supervisor), the kubelet,
// and embedded etcd's client and peer ports.
func portsFor(want Want) []int {
	p := []int{10250}
	if want.Role == "server" {
		api := want.APIPort
		if api == 0 {
			api = 6443
		}
		p = append([]int{api}, p...)
		if want.Etcd {
			p = append(p, 2379, 2380)
		}
	}
	return p
}

// ports: each port k3s needs is free, or held by k3s itself.
func ports(h Host, want Want) []Finding {
	listening := h.listeners()
	var out []Finding
	for _, port := range portsFor(want) {
		inode, ok := listening[port]
		if !ok {
			continue
		}
		comm, pid := h.owner(inode)
		// k3s itself (its processes call themselves k3s-server, k3s-agent).
		if comm == "k3s" || strings.HasPrefix(comm, "k3s-") || (comm == "" && want.K3sRunning) {
			continue
		}
		who := "another process"
		if comm != "" {
			who = fmt.Sprintf("%s (pid %s)", comm, pid)
		}
		out = append(out, Finding{Check: "port " + strconv.Itoa(port), Severity: Error, Seen: fmt.Sprintf("TCP port %d is taken by %s", port, who),
			Fix: fmt.Sprintf("stop or move what listens there (ss -ltnp 'sport = :%d'): k3s listens on it as a %s", port, want.Role)})
	}
	return out
}

// listeners are the TCP ports in LISTEN state (IPv4 and IPv6), each with
// its socket's inode.
func (h Host) listeners() map[int]string {
	out := map[int]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(h.path(f))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: TCP_LISTEN
				continue
			}
			_, portHex, _ := strings.Cut(fields[1], ":")
			port, err := strconv.ParseInt(portHex, 16, 32)
			if err == nil {
				out[int(port)] = fields[9]
			}
		}
		file.Close()
	}
	return out
}

// owner is the command name and pid of the process holding socket inode,
// or "" when none is found (another user's, without root).
func (h Host) owner(inode string) (comm, pid string) {
	procs, _ := os.ReadDir(h.path("/proc"))
	target := "socket:[" + inode + "]"
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := h.path(filepath.Join("/proc", p.Name(), "fd"))
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && link == target {
				comm, _ := h.read(filepath.Join("/proc", p.Name(), "comm"))
				return strings.TrimSpace(comm), p.Name()
			}
		}
	}
	return "", ""
}

// firewallRules: with ufw or firewalld active, everything k3s needs from
// the other nodes (its ports) and from the pod and service networks is let
// in; otherwise k3s starts and the nodes cannot reach one another.
func firewallRules(h Host, want Want) []Finding {
	if h.Firewall == nil {
		return nil
	}
	state, err := h.Firewall()
	if err != nil {
		return []Finding{{Check: "firewall", Severity: Warning, Seen: "the host firewall could not be read: " + err.Error(),
			Fix: "make sure it lets in what k3s needs (k3s's Requirements, Inbound Rules)"}}
	}
	missing := firewall.Missing(state, firewall.Needed(firewall.Want{Role: want.Role, Etcd: want.Etcd, FlannelBackend: want.FlannelBackend,
		APIPort: want.APIPort, EmbeddedRegistry: want.EmbeddedRegistry, ClusterCIDRs: want.ClusterCIDRs, ServiceCIDRs: want.ServiceCIDRs}))
	if len(missing) == 0 {
		return nil
	}
	seen := fmt.Sprintf("%s is active and does not let in %s", state.Firewall, firewall.Describe(missing))
	if want.FirewallOpened {
		return []Finding{{Check: "firewall", Severity: Warning, Seen: seen, Fix: "none by hand: they are opened before k3s is installed (k8s_cluster_firewall)"}}
	}
	var commands []string
	for _, c := range firewall.Commands(state.Firewall, missing) {
		commands = append(commands, strings.Join(quoteWords(c), " "))
	}
	return []Finding{{Check: "firewall", Severity: Error, Seen: seen,
		Fix: "open them: " + strings.Join(commands, "; ") + " (or let role k8s_cluster open them: k8s_cluster_firewall: true)"}}
}

// quoteWords quotes the words a shell would split (a ufw comment).
func quoteWords(argv []string) []string {
	out := make([]string, len(argv))
	for i, w := range argv {
		if strings.ContainsAny(w, " ;'") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		out[i] = w
	}
	return out
}
