package firewall

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNeeded(t *testing.T) {
	pods, services := []string{"10.42.0.0/16"}, []string{"10.43.0.0/16"}
	for _, tc := range []struct {
		name string
		want Want
		out  []string
	}{
		{name: "a lone server", want: Want{Role: "server", ClusterCIDRs: pods, ServiceCIDRs: services},
			out: []string{"6443/tcp", "10250/tcp", "8472/udp", "from 10.42.0.0/16", "from 10.43.0.0/16"}},
		{name: "a server with etcd on another API port", want: Want{Role: "server", Etcd: true, APIPort: 7443, FlannelBackend: "vxlan"},
			out: []string{"7443/tcp", "2379:2380/tcp", "10250/tcp", "8472/udp"}},
		{name: "an agent with wireguard and the embedded registry: its registry API on the supervisor port too",
			want: Want{Role: "agent", FlannelBackend: "wireguard-native", EmbeddedRegistry: true},
			out:  []string{"10250/tcp", "51820/udp", "51821/udp", "5001/tcp", "6443/tcp"}},
		{name: "an agent with the embedded registry, the cluster on another API port", want: Want{Role: "agent", EmbeddedRegistry: true, APIPort: 7443},
			out: []string{"10250/tcp", "8472/udp", "5001/tcp", "7443/tcp"}},
		{name: "a server with the embedded registry: the API port once", want: Want{Role: "server", EmbeddedRegistry: true},
			out: []string{"6443/tcp", "10250/tcp", "8472/udp", "5001/tcp"}},
		{name: "an agent without the embedded registry: no API port", want: Want{Role: "agent"},
			out: []string{"10250/tcp", "8472/udp"}},
		{name: "an agent without flannel, dual-stack", want: Want{Role: "agent", FlannelBackend: "none", ClusterCIDRs: []string{"10.42.0.0/16", "2001:cafe:42::/56"}},
			out: []string{"10250/tcp", "from 10.42.0.0/16", "from 2001:cafe:42::/56"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Needed(tc.want) {
				got = append(got, r.String())
				assert.NotEmpty(t, r.Why)
			}
			assert.Equal(t, tc.out, got)
		})
	}
}

func TestNetwork(t *testing.T) {
	for _, tc := range []struct {
		cidr, want, err string
	}{
		{cidr: "10.42.0.0/16", want: "10.42.0.0/16"},
		{cidr: "10.0.0.0/8", want: "10.0.0.0/8"},
		{cidr: "192.168.1.0/24", want: "192.168.1.0/24"},
		{cidr: "10.43.0.10/32", want: "10.43.0.10/32"},
		{cidr: "2001:cafe:42::/56", want: "2001:cafe:42::/56"},
		{cidr: "2001:cafe:43::/112", want: "2001:cafe:43::/112"},
		{cidr: "fd00:42::/48", want: "fd00:42::/48"},
		// ufw and firewalld list an IPv6 network in its short, lower-case form.
		{cidr: "2001:CAFE:42:0::/56", want: "2001:cafe:42::/56"},
		{cidr: "10.42.0.1/16", err: `"10.42.0.1/16" has host bits set: the network is 10.42.0.0/16`},
		{cidr: "2001:cafe:42::1/56", err: `"2001:cafe:42::1/56" has host bits set: the network is 2001:cafe:42::/56`},
		{cidr: "0.0.0.0/0", err: `"0.0.0.0/0" is every IPv4 address: letting it in would let in anyone; give k3s's own network (such as 10.42.0.0/16)`},
		{cidr: "::/0", err: `"::/0" is every IPv6 address: letting it in would let in anyone; give k3s's own network (such as 2001:cafe:42::/56)`},
		{cidr: "10.42.0.1/0", err: `"10.42.0.1/0" is every IPv4 address: letting it in would let in anyone; give k3s's own network (such as 10.42.0.0/16)`},
		{cidr: "10.0.0.0/7", err: `"10.0.0.0/7" is wider than a cluster's network can be (IPv4 /8 at most): give k3s's own network (such as 10.42.0.0/16)`},
		{cidr: "128.0.0.0/1", err: `"128.0.0.0/1" is wider than a cluster's network can be (IPv4 /8 at most): give k3s's own network (such as 10.42.0.0/16)`},
		{cidr: "2001:cafe::/32", err: `"2001:cafe::/32" is wider than a cluster's network can be (IPv6 /48 at most): give k3s's own network (such as 2001:cafe:42::/56)`},
		{cidr: "10.42.0.0", err: `"10.42.0.0" is not a network in CIDR notation (such as 10.42.0.0/16)`},
		{cidr: "10.42.0.0/16; reboot", err: `"10.42.0.0/16; reboot" is not a network in CIDR notation (such as 10.42.0.0/16)`},
		{cidr: "", err: `"" is not a network in CIDR notation (such as 10.42.0.0/16)`},
	} {
		t.Run(tc.cidr, func(t *testing.T) {
			got, err := Network(tc.cidr)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMissingAndCommands(t *testing.T) {
	needed := Needed(Want{Role: "server", Etcd: true, ClusterCIDRs: []string{"10.42.0.0/16"}})
	for _, tc := range []struct {
		name     string
		state    State
		missing  []string
		commands []string
	}{
		{name: "no firewall needs nothing", state: State{Firewall: None}},
		{name: "ufw with ssh only", state: State{Firewall: UFW, Allowed: []string{"allow 22/tcp"}},
			missing: []string{"6443/tcp", "2379:2380/tcp", "10250/tcp", "8472/udp", "from 10.42.0.0/16"},
			commands: []string{
				"ufw allow 6443/tcp comment gitops.k3s_flux: k3s API and supervisor",
				"ufw allow 2379:2380/tcp comment gitops.k3s_flux: etcd client and peers",
				"ufw allow 10250/tcp comment gitops.k3s_flux: kubelet",
				"ufw allow 8472/udp comment gitops.k3s_flux: flannel vxlan",
				"ufw allow from 10.42.0.0/16 comment gitops.k3s_flux: pods",
			}},
		{name: "ufw allowing a port for both protocols, or a rule already there", state: State{Firewall: UFW,
			Allowed: []string{"allow 6443", "allow 2379:2380/tcp", "allow 10250/tcp", "allow from 10.42.0.0/16", "deny 8472/udp"}},
			missing:  []string{"8472/udp"},
			commands: []string{"ufw allow 8472/udp comment gitops.k3s_flux: flannel vxlan"}},
		{name: "firewalld with the ports, not the network", state: State{Firewall: Firewalld,
			Allowed: []string{"6443/tcp", "2379-2380/tcp", "10250/tcp", "8472/udp"}},
			missing: []string{"from 10.42.0.0/16"},
			commands: []string{
				"firewall-cmd --permanent --zone=trusted --add-source=10.42.0.0/16",
				"firewall-cmd --reload",
			}},
		{name: "firewalld with everything", state: State{Firewall: Firewalld,
			Allowed: []string{"6443/tcp", "2379-2380/tcp", "10250/tcp", "8472/udp", "from 10.42.0.0/16"}}},
		{name: "firewalld with nothing", state: State{Firewall: Firewalld},
			missing: []string{"6443/tcp", "2379:2380/tcp", "10250/tcp", "8472/udp", "from 10.42.0.0/16"},
			commands: []string{
				"firewall-cmd --permanent --add-port=6443/tcp",
				"firewall-cmd --permanent --add-port=2379-2380/tcp",
				"firewall-cmd --permanent --add-port=10250/tcp",
				"firewall-cmd --permanent --add-port=8472/udp",
				"firewall-cmd --permanent --zone=trusted --add-source=10.42.0.0/16",
				"firewall-cmd --reload",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing := Missing(tc.state, needed)
			var got []string
			for _, r := range missing {
				got = append(got, r.String())
			}
			assert.Equal(t, tc.missing, got)
			var commands []string
			for _, c := range Commands(tc.state.Firewall, missing) {
				commands = append(commands, strings.Join(c, " "))
			}
			assert.Equal(t, tc.commands, commands)
		})
	}
}

func TestOwnRulesAndTheirRemoval(t *testing.T) {
	own := func(why string) string { return "comment=" + hex.EncodeToString([]byte(Comment+": "+why)) }
	rules := "### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n" +
		"### tuple ### allow tcp 6443 0.0.0.0/0 any 0.0.0.0/0 in " + own("k3s API and supervisor") + "\n" +
		"### tuple ### allow tcp 10250 0.0.0.0/0 any 0.0.0.0/0 in comment=" + hex.EncodeToString([]byte("mine: kubelet")) + "\n" +
		"### tuple ### allow any any 0.0.0.0/0 any 10.42.0.0/16 in " + own("pods") + "\n" +
		"### tuple ### allow tcp 6443 10.0.0.5 any 0.0.0.0/0 in " + own("odd") + "\n" +
		"### tuple ### allow tcp 6443 ::/0 any ::/0 in " + own("k3s API and supervisor") + "\n"
	h := fakeHost([]string{"ufw"}, map[string]string{UFWConfig: "ENABLED=yes\n", UFWRules[0]: rules}, nil)
	state, err := Read(context.Background(), h)
	require.NoError(t, err)
	assert.Equal(t, []string{"allow 6443/tcp", "allow from 10.42.0.0/16"}, state.Own, "a rule without the mark, or not one this collection writes, is not its own")
	var commands []string
	for _, c := range RemoveCommands(state) {
		commands = append(commands, strings.Join(c, " "))
	}
	assert.Equal(t, []string{"ufw delete allow 6443/tcp", "ufw delete allow from 10.42.0.0/16"}, commands)
	assert.Empty(t, RemoveCommands(State{Firewall: Firewalld, Allowed: []string{"6443/tcp"}}), "firewalld keeps no mark")
}

func TestParseUFWTuples(t *testing.T) {
	rules := "*filter\n:ufw-user-input - [0:0]\n### RULES ###\n\n" +
		"### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n\n" +
		"### tuple ### allow tcp 6443 0.0.0.0/0 any 0.0.0.0/0 in comment=6769746f70732e6b33735f666c7578\n" +
		"### tuple ### allow udp 8472 0.0.0.0/0 any 0.0.0.0/0 in\n" +
		"### tuple ### allow tcp 2379:2380 0.0.0.0/0 any 0.0.0.0/0 in\n" +
		"### tuple ### allow any 10250 0.0.0.0/0 any 0.0.0.0/0 in\n" +
		"### tuple ### allow any any 0.0.0.0/0 any 10.42.0.0/16 in\n" +
		"### tuple ### deny tcp 5001 0.0.0.0/0 any 0.0.0.0/0 in\n" +
		"### tuple ### allow tcp 6443 10.0.0.5 any 0.0.0.0/0 in\n" +
		"### tuple ### allow tcp 10250 0.0.0.0/0 any 0.0.0.0/0 in_eth0\n" +
		"### tuple ### allow tcp 6443 ::/0 any ::/0 in\n" +
		"### END RULES ###\n"
	assert.Equal(t, []string{"allow 22/tcp", "allow 6443/tcp", "allow 8472/udp", "allow 2379:2380/tcp", "allow 10250", "allow from 10.42.0.0/16",
		"deny 5001/tcp", "other: allow tcp 6443 10.0.0.5 any 0.0.0.0/0 in", "other: allow tcp 10250 0.0.0.0/0 any 0.0.0.0/0 in_eth0", "allow 6443/tcp"},
		ParseUFWTuples(rules))
	assert.Empty(t, ParseUFWTuples("### RULES ###\n### END RULES ###\n"))
}

// fakeHost is a host with the given commands on PATH, files, and answers
// to commands (argv joined by spaces; a missing answer fails).
func fakeHost(tools []string, files map[string]string, answers map[string]string) Host {
	return Host{
		LookPath: func(name string) (string, error) {
			for _, t := range tools {
				if t == name {
					return "/usr/sbin/" + name, nil
				}
			}
			return "", errors.New("not found")
		},
		ReadFile: func(path string) ([]byte, error) {
			if c, ok := files[path]; ok {
				return []byte(c), nil
			}
			return nil, errors.New("no such file")
		},
		Run: func(_ context.Context, argv ...string) (string, error) {
			if out, ok := answers[strings.Join(argv, " ")]; ok {
				return out, nil
			}
			return "", errors.New("exit status 1: " + argv[0] + " failed")
		},
	}
}

func TestRead(t *testing.T) {
	ufwOn := func(rules map[string]string) map[string]string {
		files := map[string]string{UFWConfig: "ENABLED=yes\n"}
		for k, v := range rules {
			files[k] = v
		}
		return files
	}
	for _, tc := range []struct {
		name    string
		host    Host
		want    State
		wantErr string
	}{
		{name: "neither installed", host: fakeHost(nil, nil, nil), want: State{Firewall: None}},
		{name: "ufw installed, not enabled", host: fakeHost([]string{"ufw"}, map[string]string{UFWConfig: "# ufw.conf\nENABLED=no\nLOGLEVEL=low\n"}, nil),
			want: State{Firewall: None}},
		{name: "ufw enabled", host: fakeHost([]string{"ufw"}, ufwOn(map[string]string{
			"/etc/ufw/user.rules":  "### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n### tuple ### allow any any 0.0.0.0/0 any 10.42.0.0/16 in\n",
			"/etc/ufw/user6.rules": "### tuple ### allow tcp 22 ::/0 any ::/0 in\n### tuple ### allow udp 8472 ::/0 any ::/0 in\n"}), nil),
			want: State{Firewall: UFW, Allowed: []string{"allow 22/tcp", "allow from 10.42.0.0/16", "allow 8472/udp"}}},
		{name: "ufw enabled without IPv6", host: fakeHost([]string{"ufw"}, ufwOn(map[string]string{"/etc/ufw/user.rules": ""}), nil),
			want: State{Firewall: UFW}},
		{name: "ufw enabled, its rules unreadable", host: fakeHost([]string{"ufw"}, ufwOn(nil), nil),
			wantErr: "read ufw's rules: no such file"},
		{name: "firewalld not running", host: fakeHost([]string{"firewall-cmd"}, nil, nil), want: State{Firewall: None}},
		{name: "firewalld running", host: fakeHost([]string{"firewall-cmd"}, nil, map[string]string{
			"firewall-cmd --state": "running\n", "firewall-cmd --permanent --list-ports": "6443/tcp 8472/udp\n",
			"firewall-cmd --permanent --zone=trusted --list-sources": "10.42.0.0/16\n"}),
			want: State{Firewall: Firewalld, Allowed: []string{"6443/tcp", "8472/udp", "from 10.42.0.0/16"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(context.Background(), tc.host)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestListed(t *testing.T) {
	for _, tc := range []struct {
		firewall string
		rule     Rule
		want     string
	}{
		{UFW, Rule{Ports: "6443", Proto: "tcp"}, "allow 6443/tcp"},
		{UFW, Rule{From: "10.42.0.0/16"}, "allow from 10.42.0.0/16"},
		{Firewalld, Rule{Ports: "2379:2380", Proto: "tcp"}, "2379-2380/tcp"},
		{Firewalld, Rule{From: "10.42.0.0/16"}, "from 10.42.0.0/16"},
	} {
		assert.Equal(t, tc.want, Listed(tc.firewall, tc.rule), "%s %+v", tc.firewall, tc.rule)
	}
}
