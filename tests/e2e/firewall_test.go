//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// TestPrepareOpensTheFirewall: a server and an agent whose owner enabled
// ufw (the real one, in each host's network namespace: SSH allowed,
// everything else coming in dropped). Left alone (k8s_cluster_firewall:
// false), preflight names each host's closed ports and the commands that
// open them, and nothing changes; --check --diff shows the rules the role
// would add and adds none; the play opens them, only those of each host's
// role, and the agent joins the server through them; a second run changes
// nothing; reset takes out the rules the role added, and only those.
func TestPrepareOpensTheFirewall(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfw", Subnet: "10.213.18", Hosts: []testhosts.HostSpec{
		{Name: "node1", Group: "k3s_controllers", Firewall: "ufw"},
		{Name: "node2", Group: "k3s_workers", Firewall: "ufw"},
	}})
	node1, node2 := b.Hosts.Host("node1"), b.Hosts.Host("node2")
	for _, h := range []*testhosts.Host{node1, node2} {
		require.NoError(t, h.EnableUFW())
	}
	rules := func(h *testhosts.Host) string {
		t.Helper()
		out, err := h.Exec("ufw show added")
		require.NoError(t, err)
		return out
	}
	// What the API port of node1 answers node2: curl's exit code 28 is a
	// connection that timed out (dropped), 7 one refused, 0 an answer.
	apiFromNode2 := func() string {
		_, err := node2.Exec("curl -sk -o /dev/null --connect-timeout 2 https://" + node1.Addr + ":6443/livez")
		if err == nil {
			return "answered"
		}
		return err.Error()
	}
	closed := map[string]string{node1.Name: rules(node1), node2.Name: rules(node2)}
	require.Contains(t, apiFromNode2(), "exit status 28", "ufw drops what it does not allow")

	// Short subtest names: the SSH control sockets live under the subtest's temporary directory.
	// Left alone, preflight names what is closed, and nothing changes.
	t.Run("closed", func(t *testing.T) {
		r := c.play(t, clusterPlayArgs(t, c, b, t.TempDir(), map[string]any{"k8s_cluster_firewall": false})...)
		require.Error(t, r.err)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "firewall: ufw is active and does not let in 6443/tcp (k3s API and supervisor), 10250/tcp (kubelet), 8472/udp (flannel vxlan), from 10.42.0.0/16 (pods), from 10.43.0.0/16 (services). Fix: open them: ufw allow 6443/tcp comment 'gitops.k3s_flux: k3s API and supervisor';", r.output)
		assert.Contains(t, flat, "firewall: ufw is active and does not let in 10250/tcp (kubelet), 8472/udp", r.output)
		for _, h := range []*testhosts.Host{node1, node2} {
			assert.Equal(t, closed[h.Name], rules(h), h.Name)
			_, err := h.Exec("test ! -e /usr/local/bin/k3s")
			assert.NoError(t, err, "k3s installed on %s", h.Name)
		}
	})

	args := clusterPlayArgs(t, c, b, t.TempDir(), nil)
	// Check mode shows the rules it would add.
	t.Run("check", func(t *testing.T) {
		r := c.play(t, append(args, "--check", "--diff")...)
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "+allow 6443/tcp\n", r.output)
		assert.Contains(t, r.output, "+allow from 10.43.0.0/16\n", r.output)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "they are opened before k3s is installed (k8s_cluster_firewall)", r.output)
		for _, h := range []*testhosts.Host{node1, node2} {
			assert.Equal(t, closed[h.Name], rules(h), h.Name)
		}
	})

	// The play opens them, and the agent joins through them.
	t.Run("opened", func(t *testing.T) {
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		server, agent := rules(node1), rules(node2)
		for _, want := range []string{
			"ufw allow 22/tcp\nufw allow 6443/tcp comment 'gitops.k3s_flux: k3s API and supervisor'\n",
			"ufw allow 10250/tcp comment 'gitops.k3s_flux: kubelet'\n",
			"ufw allow 8472/udp comment 'gitops.k3s_flux: flannel vxlan'\n",
			"ufw allow from 10.42.0.0/16 comment 'gitops.k3s_flux: pods'\n",
			"ufw allow from 10.43.0.0/16 comment 'gitops.k3s_flux: services'\n",
		} {
			assert.Contains(t, server, want)
		}
		assert.Contains(t, agent, "ufw allow 22/tcp\nufw allow 10250/tcp comment 'gitops.k3s_flux: kubelet'\n")
		assert.NotContains(t, agent, "6443", "an agent serves no API")
		assert.Equal(t, "answered", apiFromNode2())
	})

	t.Run("idempotence", func(t *testing.T) {
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "localhost": 0}, r.changed(), r.output)
	})
	t.Logf("on a host with ufw: %s", preflightCost(t, node2))

	// Reset takes out the rules the role added, and only those.
	t.Run("reset", func(t *testing.T) {
		reset := []string{"-i", b.Hosts.Inventory, filepath.Join(c.root, "playbooks", "reset.yml"), args[len(args)-2], args[len(args)-1],
			"-e", "k8s_cluster_reset_confirmed=true"}
		r := c.play(t, reset...)
		require.NoError(t, r.err, r.output)
		for _, h := range []*testhosts.Host{node1, node2} {
			assert.Equal(t, closed[h.Name], rules(h), h.Name)
		}
		assert.Contains(t, apiFromNode2(), "exit status 28", "dropped again")
	})
}
