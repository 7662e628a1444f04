package k3sfirewall

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs.
func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"role": "server"}))
}

// ufwHost is a host whose ufw is enabled and allows rules (ufw's tuples,
// as in its user.rules); the commands run are recorded.
func ufwHost(rules []string, ran *[]string) firewall.Host {
	return firewall.Host{
		LookPath: func(name string) (string, error) {
			if name == "ufw" {
				return "/usr/sbin/ufw", nil
			}
			return "", errors.New("not found")
		},
		ReadFile: func(path string) ([]byte, error) {
			switch path {
			case firewall.UFWConfig:
				return []byte("ENABLED=yes\n"), nil
			case firewall.UFWRules[0]:
				var text strings.Builder
				for _, r := range rules {
					text.WriteString("### tuple ### " + r + "\n")
				}
				return []byte(text.String()), nil
			}
			return nil, errors.New("no such file")
		},
		Run: func(_ context.Context, argv ...string) (string, error) {
			*ran = append(*ran, strings.Join(argv, " "))
			return "Rule added\n", nil
		},
	}
}

// runOn runs the module, with diff, on a ufw host with rules; it returns
// the result, the exit code and the commands run.
func runOn(t *testing.T, rules []string, args map[string]any) (map[string]any, int, []string) {
	t.Helper()
	var ran []string
	host := ufwHost(rules, &ran)
	args["_ansible_diff"] = true
	res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		return run(ctx, req, host)
	}, args)
	return res, code, ran
}

// ssh is the rule a ufw host has first.
const ssh = "allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in"

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    map[string]any
		rules   []string
		changed bool
		added   []any
		ran     []string
		diff    string
		msg     string
	}{
		{name: "opens what an agent needs", args: map[string]any{"role": "agent"}, rules: []string{ssh},
			changed: true, added: []any{"10250/tcp", "8472/udp", "from 10.42.0.0/16", "from 10.43.0.0/16"},
			ran: []string{
				"ufw allow 10250/tcp comment gitops.k3s_flux: kubelet",
				"ufw allow 8472/udp comment gitops.k3s_flux: flannel vxlan",
				"ufw allow from 10.42.0.0/16 comment gitops.k3s_flux: pods",
				"ufw allow from 10.43.0.0/16 comment gitops.k3s_flux: services",
			},
			diff: "allow 22/tcp\nallow 10250/tcp\nallow 8472/udp\nallow from 10.42.0.0/16\nallow from 10.43.0.0/16\n"},
		{name: "check mode runs nothing", args: map[string]any{"role": "server", "_ansible_check_mode": true, "flannel_backend": "none",
			"cluster_cidr": []any{}, "service_cidr": []any{}}, rules: []string{ssh},
			changed: true, added: []any{"6443/tcp", "10250/tcp"}, diff: "allow 22/tcp\nallow 6443/tcp\nallow 10250/tcp\n"},
		{name: "a second run changes nothing", args: map[string]any{"role": "server", "etcd": true},
			rules: []string{ssh, "allow tcp 6443 0.0.0.0/0 any 0.0.0.0/0 in comment=6b3373", "allow tcp 2379:2380 0.0.0.0/0 any 0.0.0.0/0 in",
				"allow any 10250 0.0.0.0/0 any 0.0.0.0/0 in", "allow udp 8472 0.0.0.0/0 any 0.0.0.0/0 in",
				"allow any any 0.0.0.0/0 any 10.42.0.0/16 in", "allow any any 0.0.0.0/0 any 10.43.0.0/16 in"},
			added: []any{}},
		{name: "a network that is none changes nothing", args: map[string]any{"role": "agent", "cluster_cidr": []any{"10.42.0.0/16; reboot"}},
			msg: `cluster_cidr: "10.42.0.0/16; reboot" is not a network in CIDR notation (such as 10.42.0.0/16)`},
		{name: "a network with host bits set changes nothing", args: map[string]any{"role": "agent", "cluster_cidr": []any{"10.42.0.1/16"}},
			msg: `cluster_cidr: "10.42.0.1/16" has host bits set: the network is 10.42.0.0/16`},
		{name: "every IPv4 address is refused", args: map[string]any{"role": "server", "service_cidr": []any{"0.0.0.0/0"}},
			msg: `service_cidr: "0.0.0.0/0" is every IPv4 address: letting it in would let in anyone; give k3s's own network (such as 10.42.0.0/16)`},
		{name: "every IPv6 address is refused, beside a good network", args: map[string]any{"role": "agent", "cluster_cidr": []any{"10.42.0.0/16", "::/0"}},
			msg: `cluster_cidr: "::/0" is every IPv6 address: letting it in would let in anyone; give k3s's own network (such as 2001:cafe:42::/56)`},
		{name: "a network wider than a cluster's is refused", args: map[string]any{"role": "agent", "cluster_cidr": []any{"10.0.0.0/4"}},
			msg: `cluster_cidr: "10.0.0.0/4" is wider than a cluster's network can be (IPv4 /8 at most): give k3s's own network (such as 10.42.0.0/16)`},
		{name: "an agent with the embedded registry opens its registry's ports", args: map[string]any{"role": "agent", "embedded_registry": true,
			"flannel_backend": "none", "cluster_cidr": []any{}, "service_cidr": []any{}}, rules: []string{ssh},
			changed: true, added: []any{"10250/tcp", "5001/tcp", "6443/tcp"},
			ran: []string{
				"ufw allow 10250/tcp comment gitops.k3s_flux: kubelet",
				"ufw allow 5001/tcp comment gitops.k3s_flux: embedded registry (peers)",
				"ufw allow 6443/tcp comment gitops.k3s_flux: embedded registry (its API, on the supervisor port)",
			},
			diff: "allow 22/tcp\nallow 10250/tcp\nallow 5001/tcp\nallow 6443/tcp\n"},
		{name: "an IPv6 network written another way is the one ufw has: nothing to do", args: map[string]any{"role": "agent", "flannel_backend": "none",
			"cluster_cidr": []any{"2001:CAFE:42:0::/56"}, "service_cidr": []any{}},
			rules: []string{ssh, "allow tcp 10250 ::/0 any ::/0 in", "allow any any ::/0 any 2001:cafe:42::/56 in"}, added: []any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code, ran := runOn(t, tc.rules, tc.args)
			assert.Equal(t, tc.ran, ran)
			if tc.msg != "" {
				assert.Equal(t, 1, code)
				assert.Equal(t, tc.msg, res["msg"])
				return
			}
			assert.Equal(t, 0, code, res)
			assert.Equal(t, tc.changed, res["changed"])
			assert.Equal(t, "ufw", res["firewall"])
			assert.Equal(t, tc.added, res["added"])
			if tc.diff == "" {
				assert.Nil(t, res["diff"])
				return
			}
			diff, _ := res["diff"].(map[string]any)
			assert.Equal(t, tc.diff, diff["after"], res)
		})
	}
}

func TestRemove(t *testing.T) {
	own := "allow tcp 6443 0.0.0.0/0 any 0.0.0.0/0 in comment=" + hex.EncodeToString([]byte(firewall.Comment+": k3s API and supervisor"))
	theirs := "allow tcp 10250 0.0.0.0/0 any 0.0.0.0/0 in"
	for _, tc := range []struct {
		name    string
		args    map[string]any
		rules   []string
		ran     []string
		removed []any
		after   string
	}{
		{name: "takes out its own rules only", args: map[string]any{"state": "absent"}, rules: []string{ssh, own, theirs},
			ran: []string{"ufw delete allow 6443/tcp"}, removed: []any{"allow 6443/tcp"}, after: "allow 22/tcp\nallow 10250/tcp\n"},
		{name: "check mode runs nothing", args: map[string]any{"state": "absent", "_ansible_check_mode": true}, rules: []string{ssh, own},
			removed: []any{"allow 6443/tcp"}, after: "allow 22/tcp\n"},
		{name: "nothing of its own: nothing to do", args: map[string]any{"state": "absent"}, rules: []string{ssh, theirs}, removed: []any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code, ran := runOn(t, tc.rules, tc.args)
			assert.Equal(t, 0, code, res)
			assert.Equal(t, tc.ran, ran)
			assert.Equal(t, tc.removed, res["removed"])
			assert.Equal(t, len(tc.removed) > 0, res["changed"])
			if tc.after == "" {
				assert.Nil(t, res["diff"])
				return
			}
			diff, _ := res["diff"].(map[string]any)
			assert.Equal(t, tc.after, diff["after"], res)
		})
	}
}
