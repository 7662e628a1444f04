// Package testhosts creates SSH test hosts on this machine, made like a
// homelab's nodes: each host is a network namespace with its own address on
// a private bridge, its own hostname, its own /etc/rancher,
// /var/lib/rancher, /var/lib/gitops.k3s_flux, /usr/local/bin, /root, /home,
// /boot, /etc/modules-load.d, /etc/sysctl.d and /etc/systemd/system (a
// private mount namespace), no Python
// interpreter at all (hidden in that namespace), a user with sudo rather
// than root to log in as, and an sshd that takes key auth only. A host
// reboots when asked (RebootRequest): everything in it stops, and it boots
// again in a new mount namespace with a new boot id. It writes an Ansible
// inventory for them and tears everything down by PID, also what a crashed
// run left behind.
package testhosts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for a test bed started without options.
const (
	DefaultName   = "k3sf"
	DefaultSubnet = "10.213.0"
)

// PrivateDirs are the host paths each test host gets its own copy of
// (/var/lib/gitops.k3s_flux: the module binaries a pipelined play keeps).
// /boot, /etc/modules-load.d and /etc/sysctl.d: what a host's next boot reads;
// /etc/systemd/system: the units' environment files k3s's install writes;
// MachineDir: the test host's own state across reboots.
var PrivateDirs = []string{"/etc/rancher", "/var/lib/rancher", "/var/lib/gitops.k3s_flux", "/usr/local/bin", "/root", "/home",
	"/boot", "/etc/modules-load.d", "/etc/sysctl.d", "/etc/systemd/system", MachineDir}

// MachineDir holds, inside each host, what the test bed keeps of it across
// reboots: BootHooks, its boot id, and the request to reboot.
const MachineDir = "/var/lib/testhost"

// BootHooks is the directory, inside each host, whose scripts the host runs
// as root at every boot, before sshd starts: the systemctl stand-in starts
// the enabled units there; a test models a Raspberry Pi's firmware there.
const BootHooks = MachineDir + "/boot.d"

// RebootRequest is the file, inside each host, that asks it to boot again
// once everything in it has stopped (the systemctl stand-in's reboot).
const RebootRequest = MachineDir + "/reboot"

// ShutdownDone is the file the host's shutdown (the systemctl stand-in's, after
// RebootRequest) writes once nothing of the old boot runs: only then does the
// host boot again.
const ShutdownDone = MachineDir + "/halted"

// User is the account Ansible logs in as: unprivileged, with sudo (without
// a password), as on a homelab's node. Its UID is unlikely to be taken on
// the machine that runs the test bed.
const (
	User    = "ansible"
	UserUID = 4242
)

// HostSpec names one host and its inventory group.
type HostSpec struct {
	Name  string
	Group string
	// Arch makes a host of another CPU (a Debian architecture: "arm64", "armhf"): it runs chrooted
	// in a minimal Debian root filesystem of that architecture
	// (tests/tools/rootfs.sh), whose programs, sshd and sudo included, run
	// under qemu-user-static, so `uname -m` there says aarch64. Empty: the
	// machine's own.
	Arch string
	// Firewall "ufw" gives the host the machine's ufw with a configuration
	// of its own (FirewallUFW); empty: none active.
	Firewall string
}

// Options configure a set of test hosts.
type Options struct {
	// Name prefixes every namespace, interface and the state directory, so
	// two test beds (a demo and a test run) can coexist. At most 6 characters.
	Name string
	// Subnet is the first three octets of the /24 the hosts live in; the
	// bridge takes .1 and the hosts .11, .12, ...
	Subnet string
	// Dir holds keys, sshd configs, private directories and the inventory.
	Dir string
	// Hosts to create; Controllers/Workers are used when empty.
	Hosts       []HostSpec
	Controllers int
	Workers     int
	// BridgeOnly makes just the test network, with no hosts (for a control
	// plane that needs an address but no SSH hosts).
	BridgeOnly bool
	// Python leaves the hosts the machine's Python (hidden otherwise), for
	// a Python baseline to compare with.
	Python bool
}

// Host is one running test host.
type Host struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	Addr  string `json:"addr"`
	NetNS string `json:"netns"`
	PID   int    `json:"pid"` // the host's boot loop (sshd's PID is in sshd.pid)
	Root  string `json:"root"`
	// Chroot is the root filesystem a host of another CPU runs in; empty
	// for the others.
	Chroot string `json:"chroot,omitempty"`
	// Firewall is HostSpec's.
	Firewall string `json:"firewall,omitempty"`
}

// Bed is a running set of test hosts.
type Bed struct {
	Name       string  `json:"name"`
	Dir        string  `json:"dir"`
	Bridge     string  `json:"bridge"`
	BridgeAddr string  `json:"bridge_addr"`
	Inventory  string  `json:"inventory"`
	KeyFile    string  `json:"key_file"`
	KnownHosts string  `json:"known_hosts"`
	Hosts      []*Host `json:"hosts"`
}

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Subnet == "" {
		o.Subnet = DefaultSubnet
	}
	slot, err := Slot()
	if err != nil {
		return err
	}
	if o.Name, o.Subnet, err = slotted(o.Name, o.Subnet, slot); err != nil {
		return err
	}
	if len(o.Name) > 6 {
		return fmt.Errorf("test bed name %q is longer than 6 characters (interface names are limited to 15)", o.Name)
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(os.TempDir(), o.Name+"-testbed")
	}
	if len(o.Hosts) == 0 && !o.BridgeOnly {
		if o.Controllers == 0 && o.Workers == 0 {
			o.Controllers, o.Workers = 1, 2
		}
		for i := 0; i < o.Controllers+o.Workers; i++ {
			group := "k3s_controllers"
			if i >= o.Controllers {
				group = "k3s_workers"
			}
			o.Hosts = append(o.Hosts, HostSpec{Name: fmt.Sprintf("node%d", i+1), Group: group})
		}
	}
	return nil
}

// Up creates the hosts, after removing whatever a previous run of the same
// name left behind. On failure it tears down what it made.
func Up(opts Options) (bed *Bed, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := Down(opts.Name, opts.Dir); err != nil {
		return nil, fmt.Errorf("clean up an earlier test bed: %w", err)
	}
	bed = &Bed{
		Name: opts.Name, Dir: opts.Dir,
		Bridge: opts.Name + "-br", BridgeAddr: opts.Subnet + ".1",
		Inventory:  filepath.Join(opts.Dir, "inventory.ini"),
		KeyFile:    filepath.Join(opts.Dir, "id_ed25519"),
		KnownHosts: filepath.Join(opts.Dir, "known_hosts"),
	}
	defer func() {
		if err != nil {
			_ = bed.Down()
			bed = nil
		}
	}()
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return bed, fmt.Errorf("create %s: %w", opts.Dir, err)
	}
	if err := bed.save(); err != nil {
		return bed, err
	}
	if err := sshKeygen(bed.KeyFile); err != nil {
		return bed, err
	}
	for _, d := range PrivateDirs {
		// The bind mounts need a mount point on the real host; an empty
		// directory there is all that is left outside the test hosts.
		if err := os.MkdirAll(d, 0o755); err != nil {
			return bed, fmt.Errorf("create mount point %s: %w", d, err)
		}
	}
	if err := run("ip", "link", "add", "name", bed.Bridge, "type", "bridge"); err != nil {
		return bed, err
	}
	if err := run("ip", "addr", "add", bed.BridgeAddr+"/24", "dev", bed.Bridge); err != nil {
		return bed, err
	}
	if err := run("ip", "link", "set", bed.Bridge, "up"); err != nil {
		return bed, err
	}
	for i, spec := range opts.Hosts {
		h := &Host{Name: spec.Name, Group: spec.Group, Addr: fmt.Sprintf("%s.%d", opts.Subnet, 11+i),
			NetNS: fmt.Sprintf("%s-%s", opts.Name, spec.Name), Root: filepath.Join(opts.Dir, "hosts", spec.Name), Firewall: spec.Firewall}
		bed.Hosts = append(bed.Hosts, h)
		start := bed.startHost
		if spec.Arch != "" {
			start = func(h *Host, index int, _ bool) error { return bed.startForeignHost(h, index, spec.Arch) }
		}
		if err := start(h, i, opts.Python); err != nil {
			return bed, fmt.Errorf("start test host %s: %w", h.Name, err)
		}
		if err := bed.save(); err != nil {
			return bed, err
		}
	}
	for _, h := range bed.Hosts {
		if err := waitForPort(h.Addr+":22", 10*time.Second); err != nil {
			return bed, fmt.Errorf("sshd on test host %s: %w (log: %s)", h.Name, err, filepath.Join(h.Root, "sshd.log"))
		}
	}
	if err := bed.writeKnownHosts(); err != nil {
		return bed, err
	}
	if err := bed.writeInventory(); err != nil {
		return bed, err
	}
	return bed, nil
}

func (b *Bed) startHost(h *Host, index int, python bool) error {
	for _, d := range append([]string{"ssh"}, PrivateDirs...) {
		if err := os.MkdirAll(filepath.Join(h.Root, privateName(d)), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(h.Root, privateName(MachineDir), filepath.Base(BootHooks)), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", BootHooks, err)
	}
	if err := b.plumb(h, index); err != nil {
		return err
	}
	hostKey := filepath.Join(h.Root, "ssh", "ssh_host_ed25519_key")
	if err := sshKeygen(hostKey); err != nil {
		return err
	}
	pub, err := os.ReadFile(b.KeyFile + ".pub")
	if err != nil {
		return fmt.Errorf("read client key: %w", err)
	}
	// sshd reads authorized_keys as the user, so it lives in the user's
	// home (the host's private /home).
	if err := writeAuthorizedKeys(filepath.Join(h.Root, privateName("/home"), User), pub); err != nil {
		return err
	}
	config := filepath.Join(h.Root, "ssh", "sshd_config")
	if err := os.WriteFile(config, []byte(sshdConfig(h.Addr, hostKey)), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", config, err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		return fmt.Errorf("create /run/sshd: %w", err)
	}
	identity, err := b.writeIdentity(h)
	if err != nil {
		return err
	}
	hide := hidePython(filepath.Join(h.Root, "etc", "empty"))
	if python {
		hide = ""
	}
	firewall := ""
	if h.Firewall == "ufw" {
		if firewall, err = h.ufw(); err != nil {
			return err
		}
	} else if h.Firewall != "" {
		return fmt.Errorf("test host %s: firewall %q: only ufw is modelled", h.Name, h.Firewall)
	}
	// The script runs inside the host's new mount and UTS namespaces:
	// private directories bound over the real ones, the host's own users,
	// sudoers and hosts files, Python hidden, its own hostname, then sshd in
	// the foreground, so that its PID is the one recorded.
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, d := range PrivateDirs {
		fmt.Fprintf(&script, "mount --bind %s %s\n", filepath.Join(h.Root, privateName(d)), d)
	}
	for _, f := range identity {
		fmt.Fprintf(&script, "mount --bind %s %s\n", filepath.Join(h.Root, "etc", privateName(f)), f)
	}
	script.WriteString(firewall)
	script.WriteString(hide)
	fmt.Fprintf(&script, "hostname %s\n", h.Name)
	script.WriteString(h.boot("", "sh"))
	fmt.Fprintf(&script, "exec /usr/sbin/sshd -D -e -f %s\n", config)
	return h.start(script.String(), filepath.Join(h.Root, privateName(MachineDir)))
}

// plumb makes the host's network namespace, linked to the bridge, with its
// default route through the bridge's address.
func (b *Bed) plumb(h *Host, index int) error {
	return b.attach(h.NetNS, fmt.Sprintf("%s-v%d", b.Name, index+1), h.Addr, b.BridgeAddr)
}

// attach makes the network namespace netns with addr on eth0, the peer of
// veth on the bridge; gateway, when not empty, is its default route.
func (b *Bed) attach(netns, veth, addr, gateway string) error {
	steps := [][]string{
		{"ip", "netns", "add", netns},
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"ip", "link", "set", veth, "master", b.Bridge, "up"},
		{"ip", "-n", netns, "link", "set", "lo", "up"},
		{"ip", "-n", netns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"ip", "-n", netns, "link", "set", "eth0", "up"},
	}
	if gateway != "" {
		steps = append(steps, []string{"ip", "-n", netns, "route", "add", "default", "via", gateway})
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// Isolated makes the network namespace <bed>-<name>, on the bed's bridge
// alone: the address .<octet> of the bed's subnet and no default route, so
// that a process run in it (ip netns exec) reaches the bed's hosts and what
// listens on the bridge's address (the API server) and nothing else; its
// loopback is its own. Down removes it with the bed.
func (b *Bed) Isolated(name string, octet byte) (netns string, err error) {
	bridge := net.ParseIP(b.BridgeAddr).To4()
	if bridge == nil {
		return "", fmt.Errorf("bed %s: bridge address %q is no IPv4 address", b.Name, b.BridgeAddr)
	}
	addr := net.IPv4(bridge[0], bridge[1], bridge[2], octet).String()
	for _, h := range b.Hosts {
		if h.Addr == addr {
			return "", fmt.Errorf("bed %s: %s is host %s's address", b.Name, addr, h.Name)
		}
	}
	netns, veth := b.Name+"-"+name, b.Name+"-"+name
	// A bridge takes the lowest MAC address of its ports until one is set: a port added now could
	// change it under the hosts' ARP caches, and their packets to the bridge's address (the API
	// server, the downloads) would go nowhere until those entries expire. Setting the address it
	// has pins it (the kernel's NET_ADDR_SET).
	mac, err := os.ReadFile(filepath.Join("/sys/class/net", b.Bridge, "address"))
	if err != nil {
		return "", fmt.Errorf("bed %s: read the bridge's address: %w", b.Name, err)
	}
	if err := run("ip", "link", "set", "dev", b.Bridge, "address", strings.TrimSpace(string(mac))); err != nil {
		return "", err
	}
	if err := b.attach(netns, veth, addr, ""); err != nil {
		return "", err
	}
	return netns, nil
}

func sshdConfig(addr, hostKey string) string {
	return strings.Join([]string{
		"ListenAddress " + addr + ":22",
		"HostKey " + hostKey,
		"PidFile none",
		"AuthorizedKeysFile .ssh/authorized_keys",
		"PermitRootLogin no",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"Subsystem sftp internal-sftp",
		"LogLevel ERROR",
		"",
	}, "\n")
}

func writeAuthorizedKeys(home string, pub []byte) error {
	sshDir := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sshDir, "authorized_keys"), pub, 0o600); err != nil {
		return fmt.Errorf("write authorized_keys: %w", err)
	}
	for _, p := range []string{home, sshDir, filepath.Join(sshDir, "authorized_keys")} {
		if err := os.Chown(p, UserUID, UserUID); err != nil {
			return fmt.Errorf("chown %s: %w", p, err)
		}
	}
	return nil
}

// boot is the shell, run in the host's new namespaces just before sshd,
// that makes a boot: a new boot id (bound over the kernel's, under root: ""
// or a chroot), each of BootHooks run (by run: "sh", or "chroot <root> sh"),
// and sshd's PID-to-be recorded for Exec.
func (h *Host) boot(root, run string) string {
	machine := filepath.Join(h.Root, privateName(MachineDir))
	if root != "" {
		machine = filepath.Join(root, MachineDir)
	}
	return fmt.Sprintf(`cat /proc/sys/kernel/random/uuid >%[1]s/boot_id
mount --bind %[1]s/boot_id %[2]s/proc/sys/kernel/random/boot_id
for hook in %[1]s/boot.d/*; do
  [ -f "$hook" ] || continue
  %[3]s %[4]s/boot.d/"${hook##*/}" || echo "boot hook $hook failed"
done
echo $$ >%[5]s
`, machine, root, run, MachineDir, filepath.Join(h.Root, "sshd.pid"))
}

// start runs the host: script in new mount and UTS namespaces inside the
// host's network namespace, its last command exec'ing sshd. When sshd exits
// on the host's request to reboot (machine/reboot, the host's RebootRequest
// seen from outside), it starts again once the shutdown has killed
// everything of the old boot (machine/halted, ShutdownDone) and a second
// later, as a machine boots; otherwise the loop ends. The shutdown's kill
// reaches sshd's listener in PID order, maybe long before the rest on a
// busy machine: a new boot started then ran beside processes of the old
// one, which a real reboot never does.
func (h *Host) start(script, machine string) error {
	logFile, err := os.Create(filepath.Join(h.Root, "sshd.log"))
	if err != nil {
		return fmt.Errorf("create sshd log: %w", err)
	}
	defer logFile.Close()
	request := filepath.Join(machine, filepath.Base(RebootRequest))
	halted := filepath.Join(machine, filepath.Base(ShutdownDone))
	loop := fmt.Sprintf(`while :; do
  rm -f %[1]s %[3]s
  ip netns exec %[2]s unshare --mount --uts --propagation private -- sh -c "$0"
  [ -e %[1]s ] || exit 0
  echo "rebooting"
  while [ ! -e %[3]s ]; do sleep 0.1; done
  sleep 1
done`, request, h.NetNS, halted)
	cmd := exec.Command("sh", "-c", loop, script)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not killed with the caller's terminal
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %w", err)
	}
	h.PID = cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reap it when it exits
	return nil
}

// writeIdentity writes the host's own /etc/passwd, /etc/group and
// /etc/shadow (the machine's, plus User), /etc/sudoers.d (User may run
// anything as root) and /etc/hosts (its name resolves, as sudo wants). It
// returns the paths to bind over.
func (b *Bed) writeIdentity(h *Host) ([]string, error) {
	etc := filepath.Join(h.Root, "etc")
	if err := os.MkdirAll(filepath.Join(etc, "etc-sudoers.d"), 0o755); err != nil {
		return nil, err
	}
	for file, line := range identityLines(h.Name) {
		base, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		if len(base) > 0 && base[len(base)-1] != '\n' {
			base = append(base, '\n')
		}
		mode := os.FileMode(0o644)
		if file == "/etc/shadow" {
			mode = 0o640
		}
		if err := os.WriteFile(filepath.Join(etc, privateName(file)), append(base, line...), mode); err != nil {
			return nil, err
		}
	}
	if err := writeSudoers(filepath.Join(etc, "etc-sudoers.d")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(etc, "empty"), nil, 0o644); err != nil {
		return nil, err
	}
	return []string{"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/hosts", "/etc/sudoers.d"}, nil
}

// identityLines are the lines a test host adds to the machine's files in
// its /etc: User, its group, a shadow entry without password ('*' is not a
// locked account to sshd) and the host's own name, which sudo resolves.
func identityLines(hostName string) map[string]string {
	return map[string]string{
		"/etc/passwd": fmt.Sprintf("%s:x:%d:%d:test host user:/home/%s:/bin/sh\n", User, UserUID, UserUID, User),
		"/etc/group":  fmt.Sprintf("%s:x:%d:\n", User, UserUID),
		"/etc/shadow": User + ":*:20000:0:99999:7:::\n",
		"/etc/hosts":  "127.0.1.1 " + hostName + "\n",
	}
}

// writeSudoers lets User run anything as root, without a password.
func writeSudoers(dir string) error {
	return os.WriteFile(filepath.Join(dir, User), []byte(User+" ALL=(ALL:ALL) NOPASSWD: ALL\n"), 0o440)
}

// hidePython is the shell that leaves the host no Python interpreter: each
// python executable has an empty, non-executable file bound over it, and
// each Python library directory an empty read-only tmpfs.
func hidePython(empty string) string {
	return fmt.Sprintf(`for f in /usr/bin/python* /usr/local/bin/python*; do
  [ -f "$f" ] && [ ! -L "$f" ] && mount --bind %s "$f"
done
for d in /usr/lib/python3* /usr/local/lib/python3*; do
  [ -d "$d" ] && mount -t tmpfs -o ro,size=4k tmpfs "$d"
done
true
`, empty)
}

func privateName(dir string) string {
	return strings.ReplaceAll(strings.Trim(dir, "/"), "/", "-")
}

func (b *Bed) writeKnownHosts() error {
	var buf bytes.Buffer
	for _, h := range b.Hosts {
		pub, err := os.ReadFile(filepath.Join(h.Root, "ssh", "ssh_host_ed25519_key.pub"))
		if err != nil {
			return fmt.Errorf("read host key of %s: %w", h.Name, err)
		}
		fields := strings.Fields(string(pub))
		fmt.Fprintf(&buf, "%s %s %s\n", h.Addr, fields[0], fields[1])
	}
	return os.WriteFile(b.KnownHosts, buf.Bytes(), 0o600)
}

func (b *Bed) writeInventory() error {
	groups := map[string][]string{}
	var order []string
	for _, h := range b.Hosts {
		if _, seen := groups[h.Group]; !seen {
			order = append(order, h.Group)
		}
		groups[h.Group] = append(groups[h.Group], fmt.Sprintf("%s ansible_host=%s", h.Name, h.Addr))
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# SSH test hosts of test bed %q (tests/bed/testhosts); removed by `down`.\n", b.Name)
	for _, g := range order {
		fmt.Fprintf(&buf, "[%s]\n%s\n\n", g, strings.Join(groups[g], "\n"))
	}
	fmt.Fprintf(&buf, "[k3s_cluster:children]\n%s\n\n", strings.Join(order, "\n"))
	fmt.Fprintf(&buf, "[k3s_cluster:vars]\nansible_user=%s\nansible_ssh_private_key_file=%s\n", User, b.KeyFile)
	// Keepalives: a host whose link is gone is UNREACHABLE once three go
	// unanswered (15 s), not after TCP's ~15 minutes.
	fmt.Fprintf(&buf, "ansible_ssh_common_args='-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null -o ServerAliveInterval=5 -o ServerAliveCountMax=3'\n", b.KnownHosts)
	// Ansible's own ssh_args without its -C: the hosts are on this machine, where ssh's zlib,
	// compressing every upload (a node binary every task with pipelining off), was about 8 % of an
	// e2e run's CPU (perf record).
	buf.WriteString("ansible_ssh_args='-o ControlMaster=auto -o ControlPersist=60s'\n")
	return os.WriteFile(b.Inventory, buf.Bytes(), 0o600)
}

func (b *Bed) save() error {
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("encode test bed state: %w", err)
	}
	return os.WriteFile(filepath.Join(b.Dir, "state.json"), raw, 0o600)
}

// Load reads the state of a running test bed from its directory.
func Load(dir string) (*Bed, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, fmt.Errorf("read test bed state: %w", err)
	}
	var b Bed
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("decode test bed state %s: %w", dir, err)
	}
	return &b, nil
}

// Host returns the host of that name, or nil.
func (b *Bed) Host(name string) *Host {
	for _, h := range b.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Exec runs a shell command inside the host (its network, mount and UTS
// namespaces, and its root directory) and returns its combined output.
func (h *Host) Exec(command string) (string, error) {
	out, err := h.shell(command).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("on %s: %s: %w: %s", h.Name, command, err, out)
	}
	return string(out), nil
}

// shell is sh -c script with args inside the host: its network, mount and
// UTS namespaces and its root directory, those of its sshd of this boot.
func (h *Host) shell(script string, args ...string) *exec.Cmd {
	pid, _ := os.ReadFile(filepath.Join(h.Root, "sshd.pid"))
	argv := append([]string{"-t", strings.TrimSpace(string(pid)), "-m", "-u", "-n", "-r", "-w", "--", "sh", "-c", script}, args...)
	return exec.Command("nsenter", argv...)
}

// WriteFile writes a file inside the host (through its mount namespace).
func (h *Host) WriteFile(path string, content []byte, mode os.FileMode) error {
	cmd := h.shell(`cat >"$0" && chmod "$1" "$0"`, path, strconv.FormatUint(uint64(mode.Perm()), 8))
	cmd.Stdin = bytes.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("write %s on %s: %w: %s", path, h.Name, err, out)
	}
	return nil
}

// SetLink takes the host's network link down or brings it back up, as a
// pulled cable (or a board that lost its Wi-Fi) would.
func (h *Host) SetLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if err := run("ip", "-n", h.NetNS, "link", "set", "eth0", state); err != nil {
		return err
	}
	if up {
		// The default route went with the link.
		_ = run("ip", "-n", h.NetNS, "route", "replace", "default", "via", strings.Join(strings.Split(h.Addr, ".")[:3], ".")+".1")
	}
	return nil
}

// AddAddress puts another address on the host's link, as kube-vip's leader
// does with the API's virtual IP (ARP mode: the kernel then answers ARP
// for it on the link).
func (h *Host) AddAddress(cidr string) error {
	return run("ip", "-n", h.NetNS, "addr", "add", cidr, "dev", "eth0")
}

// Down stops this bed's hosts and removes its namespaces, bridge and
// directory.
func (b *Bed) Down() error {
	return Down(b.Name, b.Dir)
}

// Down removes the test bed called name whose state is in dir: it stops the
// sshd processes it recorded (checking each PID is still that sshd), any
// process left in its namespaces, then the namespaces, the bridge and dir.
// Nothing is left of a crashed run of the same name either.
func Down(name, dir string) error {
	var errs []error
	var procs []pinned
	if b, err := Load(dir); err == nil {
		for _, h := range b.Hosts {
			if h.PID <= 0 {
				continue
			}
			if p, ok := pin(h.PID, func(pid int) bool { return isOurSSHD(pid, h.Root) }); ok {
				procs = append(procs, p)
			}
		}
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	var namespaces []string
	for _, line := range strings.Split(string(out), "\n") {
		if ns := strings.Fields(line); len(ns) > 0 && strings.HasPrefix(ns[0], name+"-") {
			namespaces = append(namespaces, ns[0])
		}
	}
	for _, ns := range namespaces {
		ino, err := netnsInode(ns)
		if err != nil {
			continue
		}
		pids, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, p := range strings.Fields(string(pids)) {
			pid, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			if p, ok := pin(pid, func(pid int) bool { return inNetns(pid, ino) }); ok {
				procs = append(procs, p)
			}
		}
	}
	stopAll(procs)
	for _, ns := range namespaces {
		if err := run("ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	// A deleted namespace takes its veth pairs with it only once the
	// kernel gets round to it; delete them now so that a new Up can reuse
	// the names at once.
	ifaces, _ := net.Interfaces()
	for _, iface := range ifaces {
		if strings.HasPrefix(iface.Name, name+"-") {
			if err := run("ip", "link", "del", iface.Name); err != nil && !linkGone(err) {
				errs = append(errs, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// linkGone tells whether `ip link del` failed only because the link was no
// longer there: "Cannot find device" when it was gone before ip looked its
// name up, "No such device" from the kernel when the namespace's deletion
// took it between that lookup and the delete.
func linkGone(err error) bool {
	return strings.Contains(err.Error(), "Cannot find device") || strings.Contains(err.Error(), "No such device")
}

// isOurSSHD tells whether pid is still the sshd started for a host whose
// files are under root, so that a reused PID is never killed.
func isOurSSHD(pid int, root string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(cmdline, []byte("sshd")) && bytes.Contains(cmdline, []byte(root))
}

// pinned is a process held by a pidfd: signals sent through it reach that
// process or none, never another that took its PID.
type pinned struct {
	pid, fd int
}

// pin holds pid with a pidfd, then checks with ours that it is the process
// meant: a PID read a moment ago (from `ip netns pids`, or a bed's state)
// may belong to another process by now, another test's among them. PIDs
// wrap at pid_max (32768 on this machine) and the beds start processes by
// the thousand a minute, so a process of one bed once took a PID another
// bed's teardown had listed, and was killed: a unit's READY=1 listener,
// which left that bed's k3s activating for ever.
func pin(pid int, ours func(pid int) bool) (pinned, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return pinned{}, false // gone already
	}
	if !ours(pid) {
		_ = unix.Close(fd)
		return pinned{}, false
	}
	return pinned{pid: pid, fd: fd}, true
}

// stopAll sends each pinned process SIGTERM, gives them 2s in all to exit,
// then SIGKILLs those left, and releases the pidfds.
func stopAll(procs []pinned) {
	for _, p := range procs {
		_ = unix.PidfdSendSignal(p.fd, unix.SIGTERM, nil, 0)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range procs {
		if !waitExit(p.fd, time.Until(deadline)) {
			_ = unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
		}
		_ = unix.Close(p.fd)
	}
}

// waitExit waits at most d for the process of pidfd fd to exit (its pidfd
// becomes readable then).
func waitExit(fd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(max(d, 0).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// netnsInode is the inode of the named network namespace (ip netns's
// /run/netns/<name>), which /proc/<pid>/ns/net names for its processes.
func netnsInode(name string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join("/run/netns", name), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// inNetns tells whether pid runs in the network namespace of inode ino.
func inNetns(pid int, ino uint64) bool {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	return err == nil && link == fmt.Sprintf("net:[%d]", ino)
}

// ProcessAlive tells whether pid is running: an exited process waiting to be
// reaped by its parent (a zombie) is not.
func ProcessAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func sshKeygen(path string) error {
	_ = os.Remove(path)
	_ = os.Remove(path + ".pub")
	return run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "k3s_flux-testbed", "-f", path)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func waitForPort(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reachable after %s: %w", addr, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
