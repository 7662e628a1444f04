package k3sfirewall

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, Module)
}

// Every option's bad values, made from the spec: a clear msg naming the
// option, the body never runs.
func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, Module, ansibletest.BadInputs(Module, map[string]any{"role": "server"}))
}

// ufwHost is a host whose ufw is enabled and allows rules; the commands
// run are recorded, and `ufw allow` adds to what `ufw show added` lists.
func ufwHost(rules []string, ran *[]string) firewall.Host {
	return firewall.Host{
		LookPath: func(name string) (string, error) {
			if name == "ufw" {
				return "/usr/sbin/ufw", nil
			}
			return "", errors.New("not found")
		},
		ReadFile: func(string) ([]byte, error) { return []byte("ENABLED=yes\n"), nil },
		Run: func(_ context.Context, argv ...string) (string, error) {
			line := strings.Join(argv, " ")
			if line == "ufw show added" {
				return "Added user rules (see 'ufw status' for running firewall):\n" + strings.Join(rules, "\n") + "\n", nil
			}
			*ran = append(*ran, line)
			return "Rule added\n", nil
		},
	}
}

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
		{name: "opens what an agent needs", args: map[string]any{"role": "agent"}, rules: []string{"ufw allow 22/tcp"},
			changed: true, added: []any{"10250/tcp", "8472/udp", "from 10.42.0.0/16", "from 10.43.0.0/16"},
			ran: []string{
				"ufw allow 10250/tcp comment gitops.k3s_flux: kubelet",
				"ufw allow 8472/udp comment gitops.k3s_flux: flannel vxlan",
				"ufw allow from 10.42.0.0/16 comment gitops.k3s_flux: pods",
				"ufw allow from 10.43.0.0/16 comment gitops.k3s_flux: services",
			},
			diff: "allow 22/tcp\nallow 10250/tcp\nallow 8472/udp\nallow from 10.42.0.0/16\nallow from 10.43.0.0/16\n"},
		{name: "check mode runs nothing", args: map[string]any{"role": "server", "_ansible_check_mode": true, "flannel_backend": "none",
			"cluster_cidr": []any{}, "service_cidr": []any{}}, rules: []string{"ufw allow 22/tcp"},
			changed: true, added: []any{"6443/tcp", "10250/tcp"}, diff: "allow 22/tcp\nallow 6443/tcp\nallow 10250/tcp\n"},
		{name: "a second run changes nothing", args: map[string]any{"role": "server", "etcd": true},
			rules: []string{"ufw allow 22/tcp", "ufw allow 6443/tcp comment 'gitops.k3s_flux: k3s API and supervisor'", "ufw allow 2379:2380/tcp",
				"ufw allow 10250/tcp", "ufw allow 8472/udp", "ufw allow from 10.42.0.0/16", "ufw allow from 10.43.0.0/16"},
			added: []any{}},
		{name: "a network that is none changes nothing", args: map[string]any{"role": "agent", "cluster_cidr": []any{"10.42.0.0/16; reboot"}},
			msg: `cluster_cidr: "10.42.0.0/16; reboot" is not a network in CIDR notation (such as 10.42.0.0/16)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			host := ufwHost(tc.rules, &ran)
			tc.args["_ansible_diff"] = true
			res, code, _ := ansibletest.Run(t, Module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return Run(ctx, req, host)
			}, tc.args)
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
