// Package firewall decides which ports a node's host firewall must open
// for k3s, as k3s documents them (Requirements: "Inbound Rules for K3s
// Nodes"; Known issues: ufw and firewalld), reads what ufw or firewalld
// allows now, and plans the commands that add what is missing. Only
// adding: a rule someone else made is never touched.
package firewall

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Firewalls this package knows.
const (
	UFW       = "ufw"
	Firewalld = "firewalld"
	None      = "none"
)

// Comment marks the ufw rules this collection adds (ufw keeps it with the
// rule), so that a person reading `ufw status` knows where they came from.
const Comment = "gitops.k3s_flux"

// Rule is one thing to allow in: a port or port range of a protocol, or
// everything from a source network.
type Rule struct {
	Ports string // "6443", "2379:2380"; empty for a source rule
	Proto string // "tcp" or "udp"
	From  string // a CIDR, for a source rule
	Why   string
}

// String is the rule as ufw writes it after `ufw allow`.
func (r Rule) String() string {
	if r.From != "" {
		return "from " + r.From
	}
	return r.Ports + "/" + r.Proto
}

// Want is what k3s will run on the node.
type Want struct {
	Role             string // server or agent
	Etcd             bool   // a server with embedded etcd
	FlannelBackend   string // vxlan unless set
	APIPort          int    // 6443 unless set
	EmbeddedRegistry bool   // k3s's embedded registry mirror (spegel)
	ClusterCIDRs     []string
	ServiceCIDRs     []string
}

// Needed is what k3s needs allowed in on a node of want's role: the API
// (supervisor) port on servers, etcd's client and peer ports between
// servers, the kubelet's port, flannel's backend port, the embedded
// registry's peer port and, on agents too, its API on the supervisor port
// (k3s's Requirements list both on all nodes), and everything from the pod
// and service networks (ufw's and firewalld's rules are evaluated before
// kube-proxy's).
func Needed(w Want) []Rule {
	var out []Rule
	api := w.APIPort
	if api == 0 {
		api = 6443
	}
	if w.Role == "server" {
		out = append(out, Rule{Ports: strconv.Itoa(api), Proto: "tcp", Why: "k3s API and supervisor"})
		if w.Etcd {
			out = append(out, Rule{Ports: "2379:2380", Proto: "tcp", Why: "etcd client and peers"})
		}
	}
	out = append(out, Rule{Ports: "10250", Proto: "tcp", Why: "kubelet"})
	switch w.FlannelBackend {
	case "", "vxlan":
		out = append(out, Rule{Ports: "8472", Proto: "udp", Why: "flannel vxlan"})
	case "wireguard-native":
		out = append(out, Rule{Ports: "51820", Proto: "udp", Why: "flannel wireguard (IPv4)"},
			Rule{Ports: "51821", Proto: "udp", Why: "flannel wireguard (IPv6)"})
	}
	if w.EmbeddedRegistry {
		out = append(out, Rule{Ports: "5001", Proto: "tcp", Why: "embedded registry (peers)"})
		if w.Role != "server" {
			// Every node serves the registry's API on the supervisor port; a
			// server has it open already.
			out = append(out, Rule{Ports: strconv.Itoa(api), Proto: "tcp", Why: "embedded registry (its API, on the supervisor port)"})
		}
	}
	for _, c := range w.ClusterCIDRs {
		out = append(out, Rule{From: c, Why: "pods"})
	}
	for _, c := range w.ServiceCIDRs {
		out = append(out, Rule{From: c, Why: "services"})
	}
	return out
}

// The widest pod or service network a rule lets in, by prefix length.
// kube-controller-manager gives each node a block of the cluster-cidr at
// most 16 bits narrower than it (its CIDR set is a bitmap), /64 by default
// for IPv6: it refuses an IPv6 cluster-cidr wider than /48. An IPv4 /8
// holds 65,536 nodes' /24 blocks, far more than k3s's sizing guide goes
// to. The service-cidr is narrower still (kube-apiserver took at most /12
// and /108 until its ServiceCIDR allocator). A wider network is no
// cluster's: it only opens the host (0.0.0.0/0 lets in anyone).
const (
	WidestIPv4 = 8
	WidestIPv6 = 48
)

// Network is cidr in its canonical form, as ufw writes it back (10.42.0.0/16,
// 2001:cafe:42::/56), or why it is not a pod or service network: not in
// CIDR notation, every address or wider than WidestIPv4 / WidestIPv6, or
// with host bits set (refused as Python's ipaddress does in strict mode:
// ufw would keep the network, and the rule would never be found again).
func Network(cidr string) (string, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("%q is not a network in CIDR notation (such as 10.42.0.0/16)", cidr)
	}
	family, widest, example := "IPv4", WidestIPv4, "10.42.0.0/16"
	if p.Addr().Is6() {
		family, widest, example = "IPv6", WidestIPv6, "2001:cafe:42::/56"
	}
	switch {
	case p.Bits() == 0:
		return "", fmt.Errorf("%q is every %s address: letting it in would let in anyone; give k3s's own network (such as %s)", cidr, family, example)
	case p.Bits() < widest:
		return "", fmt.Errorf("%q is wider than a cluster's network can be (%s /%d at most): give k3s's own network (such as %s)", cidr, family, widest, example)
	case p.Masked() != p:
		return "", fmt.Errorf("%q has host bits set: the network is %s", cidr, p.Masked())
	}
	return p.String(), nil
}

// State is what a host's firewall allows now.
type State struct {
	Firewall string // UFW, Firewalld or None
	// UFW: the rules `ufw show added` lists, each as "allow 6443/tcp"
	// (comment dropped). Firewalld: "6443/tcp" for a port of the default
	// zone, "from 10.42.0.0/16" for a source of the trusted zone.
	Allowed []string
	// Own are the ufw rules of Allowed that this collection added (their
	// comment starts with Comment): the only ones it ever removes.
	// firewalld keeps no such mark.
	Own []string
}

// Missing is the part of needed that the firewall does not allow yet. A
// ufw rule for a port without a protocol allows both.
func Missing(s State, needed []Rule) []Rule {
	var out []Rule
	for _, r := range needed {
		if !allowed(s, r) {
			out = append(out, r)
		}
	}
	return out
}

func allowed(s State, r Rule) bool {
	switch s.Firewall {
	case UFW:
		return slices.Contains(s.Allowed, Listed(UFW, r)) || (r.From == "" && slices.Contains(s.Allowed, "allow "+r.Ports))
	case Firewalld:
		return slices.Contains(s.Allowed, Listed(Firewalld, r))
	}
	return true
}

// Listed is a rule in the form State.Allowed lists it for firewall: ufw's
// "allow <rule>", firewalld's port (a range with "-") or "from <network>".
func Listed(firewall string, r Rule) string {
	switch {
	case firewall == UFW:
		return "allow " + r.String()
	case r.From != "":
		return r.String()
	}
	return strings.ReplaceAll(r.Ports, ":", "-") + "/" + r.Proto
}

// Commands are the commands that add rules to firewall, in order.
func Commands(firewall string, rules []Rule) [][]string {
	var out [][]string
	switch firewall {
	case UFW:
		for _, r := range rules {
			cmd := append([]string{"ufw", "allow"}, strings.Fields(r.String())...)
			out = append(out, append(cmd, "comment", Comment+": "+r.Why))
		}
	case Firewalld:
		for _, r := range rules {
			if r.From != "" {
				out = append(out, []string{"firewall-cmd", "--permanent", "--zone=trusted", "--add-source=" + r.From})
				continue
			}
			out = append(out, []string{"firewall-cmd", "--permanent", "--add-port=" + Listed(Firewalld, r)})
		}
		if len(rules) > 0 {
			// The permanent configuration becomes the running one.
			out = append(out, []string{"firewall-cmd", "--reload"})
		}
	}
	return out
}

// RemoveCommands are the commands that take out the rules this collection
// added to ufw (state.Own); none for firewalld, which keeps no mark of who
// added a port.
func RemoveCommands(s State) [][]string {
	var out [][]string
	if s.Firewall != UFW {
		return nil
	}
	for _, r := range s.Own {
		out = append(out, append([]string{"ufw", "delete"}, strings.Fields(r)...))
	}
	return out
}

// Describe lists rules for a person: "6443/tcp (k3s API and supervisor)".
func Describe(rules []Rule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = fmt.Sprintf("%s (%s)", r, r.Why)
	}
	return strings.Join(parts, ", ")
}

// Host is how the firewall is read and changed on a node.
type Host struct {
	LookPath func(name string) (string, error)
	ReadFile func(path string) ([]byte, error)
	// Run runs a command and returns its standard output; an error carries
	// its standard error.
	Run func(ctx context.Context, argv ...string) (string, error)
}

// ThisHost is the firewall of the machine the binary runs on.
func ThisHost() Host { return Host{LookPath: exec.LookPath, ReadFile: os.ReadFile, Run: runCommand} }

// runCommand runs argv and returns its standard output; its error carries
// the command's standard error.
func runCommand(ctx context.Context, argv ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return stdout.String(), fmt.Errorf("%w: %s", err, msg)
		}
		return stdout.String(), err
	}
	return stdout.String(), nil
}

// UFWConfig is where ufw keeps whether it is enabled (ENABLED=yes): what
// it starts from at boot and what `ufw status` reports.
const UFWConfig = "/etc/ufw/ufw.conf"

// UFWRules are where ufw keeps the rules `ufw allow` added (IPv4, IPv6),
// each as a "### tuple ###" comment line that ufw reads back itself.
var UFWRules = []string{"/etc/ufw/user.rules", "/etc/ufw/user6.rules"}

// Read says which firewall is active on the host and what it allows. ufw
// is active when installed and enabled in its configuration, and its rules
// are read from its files (running ufw, a Python program, would cost a
// re-run a quarter of a second on a Pi); firewalld is active when its
// daemon answers that it is running.
func Read(ctx context.Context, h Host) (State, error) {
	if _, err := h.LookPath("ufw"); err == nil {
		if raw, err := h.ReadFile(UFWConfig); err == nil && ufwEnabled(string(raw)) {
			state := State{Firewall: UFW}
			for i, f := range UFWRules {
				raw, err := h.ReadFile(f)
				if err != nil {
					if i == 0 {
						return State{}, fmt.Errorf("read ufw's rules: %w", err)
					}
					continue // IPv6 off
				}
				for _, r := range ParseUFWTuples(string(raw)) {
					if !slices.Contains(state.Allowed, r) {
						state.Allowed = append(state.Allowed, r)
					}
				}
				for _, r := range ownUFWRules(string(raw)) {
					if !slices.Contains(state.Own, r) {
						state.Own = append(state.Own, r)
					}
				}
			}
			return state, nil
		}
	}
	if _, err := h.LookPath("firewall-cmd"); err == nil {
		if state, err := h.Run(ctx, "firewall-cmd", "--state"); err == nil && strings.TrimSpace(state) == "running" {
			return readFirewalld(ctx, h)
		}
	}
	return State{Firewall: None}, nil
}

func readFirewalld(ctx context.Context, h Host) (State, error) {
	ports, err := h.Run(ctx, "firewall-cmd", "--permanent", "--list-ports")
	if err != nil {
		return State{}, fmt.Errorf("read firewalld's ports (firewall-cmd --permanent --list-ports): %w", err)
	}
	sources, err := h.Run(ctx, "firewall-cmd", "--permanent", "--zone=trusted", "--list-sources")
	if err != nil {
		return State{}, fmt.Errorf("read firewalld's trusted sources (firewall-cmd --permanent --zone=trusted --list-sources): %w", err)
	}
	allowed := strings.Fields(ports)
	for _, s := range strings.Fields(sources) {
		allowed = append(allowed, "from "+s)
	}
	return State{Firewall: Firewalld, Allowed: allowed}, nil
}

// ownUFWRules are the rules of a ufw rules file whose comment (hex, as ufw
// writes it) starts with Comment, normalized as ParseUFWTuples does.
func ownUFWRules(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		_, comment, ok := strings.Cut(line, " comment=")
		if !ok {
			continue
		}
		decoded, err := hex.DecodeString(strings.TrimSpace(comment))
		if err != nil || !strings.HasPrefix(string(decoded), Comment+":") {
			continue
		}
		if rules := ParseUFWTuples(line); len(rules) == 1 && !strings.HasPrefix(rules[0], "other: ") {
			out = append(out, rules[0])
		}
	}
	return out
}

func ufwEnabled(conf string) bool {
	for _, line := range strings.Split(conf, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && key == "ENABLED" {
			return strings.EqualFold(strings.Trim(value, `"'`), "yes")
		}
	}
	return false
}

// ParseUFWTuples reads ufw's rules files: each rule is a line
// "### tuple ### <action> <proto> <dport> <dst> <sport> <src> <direction>
// [comment=<hex>]". Those coming in from anywhere to any address become
// "allow 6443/tcp" ("allow 6443" for both protocols), "allow from
// 10.42.0.0/16", as `ufw show added` writes them; others (to one address,
// on one interface, from one port) as "other: <tuple>", which never
// matches a rule k3s needs.
func ParseUFWTuples(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		tuple, ok := strings.CutPrefix(strings.TrimSpace(line), "### tuple ###")
		if !ok {
			continue
		}
		f := strings.Fields(tuple)
		if len(f) < 7 {
			continue
		}
		action, proto, dport, dst, sport, src, dir := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
		anyAddr := func(a string) bool { return a == "0.0.0.0/0" || a == "::/0" }
		switch {
		case dir != "in" || !anyAddr(dst) || sport != "any":
			out = append(out, "other: "+strings.Join(f, " "))
		case anyAddr(src) && dport != "any" && proto == "any":
			out = append(out, action+" "+dport)
		case anyAddr(src) && dport != "any":
			out = append(out, action+" "+dport+"/"+proto)
		case !anyAddr(src) && dport == "any" && proto == "any":
			out = append(out, action+" from "+src)
		default:
			out = append(out, "other: "+strings.Join(f, " "))
		}
	}
	return out
}
