//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestStrictK3sJoin: a worker whose way to the server is
// blocked (a firewall in a homelab) runs an agent that retries for ever and
// never reports ready, as k3s does (docs/testing.md). The play does not
// hang: it ends within the wait plus a minute of the agent's start, naming
// the host, the unit's state and what the agent logged. With the way open again, the same play
// converges. (Short subtest names: the SSH control sockets live under their
// temporary directories.)
func TestStrictK3sJoin(t *testing.T) {
	// Mostly waiting (SSH keepalives, k3s's retries and restarts): run beside the other
	// waiting test, TestNodeLostMidPlay or TestStrictK3sJoin, once the others are done.
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfj", Subnet: "10.213.13", Controllers: 1, Workers: 1})
	dir := t.TempDir()
	server, worker := b.Hosts.Host("node1"), b.Hosts.Host("node2")
	// The API endpoint is a DNS name, as a homelab's would be: the controller and the worker
	// resolve it through /etc/hosts (the controller's a private one, see play below), and the
	// role puts it into the server's certificate.
	const endpoint = "k3s-api.home.arpa"
	hosts := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+server.Addr+" "+endpoint+"\n"), 0o644))
	_, err := worker.Exec("echo '" + server.Addr + " " + endpoint + "' >>/etc/hosts")
	require.NoError(t, err)
	// The role's own wait (k8s_cluster_wait_timeout): the plays below that converge, and those
	// that fail at once on a crash loop or a refused node password, do not depend on it.
	args := clusterPlayArgs(t, c, b, dir, map[string]any{"k8s_cluster_api_endpoint": endpoint,
		"ansible_python_interpreter": "/usr/bin/python3"})
	// play runs ansible-playbook in a mount namespace of its own whose /etc/hosts names the
	// endpoint (the machine's stays as it is), within ctx.
	play := func(ctx context.Context, args ...string) playResult {
		r := runIn(ctx, "", c.env(t), "unshare", append([]string{"--mount", "sh", "-c", `mount --bind "$0" /etc/hosts && exec ansible-playbook "$@"`, hosts}, args...)...)
		noteFailure(t, r)
		return r
	}
	route := func(verb string) {
		out, err := exec.Command("ip", "-n", worker.NetNS, "route", verb, "unreachable", server.Addr+"/32").CombinedOutput()
		require.NoError(t, err, string(out))
	}

	// Two Raspberry Pis both named raspberrypi: k3s would register the second under the first's
	// Node name and reject its node password for ever. Refused before anything is installed.
	t.Run("one host name", func(t *testing.T) {
		// As a re-flashed Pi would be: its new name in its own /etc/hosts (else sudo waits on DNS).
		// The copy goes to the host's own /root: /tmp is the machine's, shared with the other pass's
		// hosts (this test in the other pass once restored its worker's hosts file from it).
		_, err := worker.Exec("cp /etc/hosts /root/hosts.orig && echo '127.0.1.1 node1' >>/etc/hosts && hostname node1")
		require.NoError(t, err)
		r := play(context.Background(), args...)
		_, restore := worker.Exec("cat /root/hosts.orig >/etc/hosts && hostname node2") // /etc/hosts is a bind mount: rewritten, not replaced
		require.NoError(t, restore)
		require.Error(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "node1 and node2 would all register as Node node1; k3s names a node after its node-name, else its lower-cased host name")
		assert.Contains(t, flat, "Nothing was changed.")
		for _, h := range []string{"node1", "node2"} {
			_, err := b.Hosts.Host(h).Exec("test ! -e /usr/local/bin/k3s && test ! -e /etc/rancher/k3s/config.yaml")
			assert.NoError(t, err, "%s untouched", h)
		}
	})

	t.Run("server unreachable", func(t *testing.T) {
		route("add")
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		// A short wait, meant to run out: the play ends within it plus a minute of the start of
		// the agent it waited for (facts, preflight and node1's install come before: the load of
		// the machine decides how long they take, not the product).
		const unjoinableWait = 15
		r := play(ctx, append(args, "-e", fmt.Sprintf("k8s_cluster_wait_timeout=%d", unjoinableWait))...)
		ended := time.Now()
		output := r.output
		require.NoError(t, ctx.Err(), "the play hung:\n%s", output)
		require.Error(t, r.err, output)
		runs, err := bed.Invocations(worker)
		require.NoError(t, err)
		i := slices.IndexFunc(runs, func(inv bed.Invocation) bool { return inv.Command == "agent" })
		require.GreaterOrEqual(t, i, 0, "k3s-agent started on node2: %s", output)
		require.Len(t, runs, i+1, "k3s-agent started once, never restarted")
		t.Logf("the play ended after %s, %s after k3s-agent started", r.duration.Round(100*time.Millisecond), ended.Sub(runs[i].Time).Round(100*time.Millisecond))
		assert.Less(t, ended.Sub(runs[i].Time), (unjoinableWait+60)*time.Second, "within the wait plus a minute of the agent's start")
		assert.Equal(t, 1, r.recap["node2"]["failed"], output)
		assert.Equal(t, 0, r.recap["node1"]["failed"], output)
		flat := strings.Join(strings.Fields(output), " ")
		assert.Regexp(t, `fatal: \[node2\]: FAILED! => .*k3s-agent did not report ready within `+strconv.Itoa(unjoinableWait)+`s: enabled, activating \(start\), restarted 0 times since this task started it; its journal ends: .*Failed to validate connection to cluster at https://`+strings.ReplaceAll(endpoint, ".", `\.`)+`:6443`, flat)
		state, err := worker.Exec("systemctl show --property=ActiveState,SubState k3s-agent")
		require.NoError(t, err)
		assert.Equal(t, "ActiveState=activating\nSubState=start\n", state, "still trying to join, as k3s would")
	})

	t.Run("way open again", func(t *testing.T) { // (idempotence is every other play test's)
		route("del")
		r := play(context.Background(), args...)
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "node2 Ready")
		config, err := server.Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^tls-san:\n  - "?`+strings.ReplaceAll(endpoint, ".", `\.`)+`"?$`, config, "the API endpoint is in the server's certificate")
		// The controller reached the API by that name, verifying its certificate: the play's
		// node list came through the kubeconfig it wrote.
		kubeconfig, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
		require.NoError(t, err)
		assert.Contains(t, string(kubeconfig), "server: https://"+endpoint+":6443")
		assert.NotContains(t, string(kubeconfig), "insecure-skip-tls-verify")
		agentConfig, err := worker.Exec("grep '^server:' /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Contains(t, agentConfig, endpoint, "the agent joined by the name")
	})

	// A hand-edited registries.yaml that does not parse: k3s exits at start, and systemd
	// restarts it every 5 s. The play fails the host as crash-looping, not active.
	t.Run("crash loop", func(t *testing.T) {
		_, err := worker.Exec("systemctl stop k3s-agent && echo 'mirrors: [' >/etc/rancher/k3s/registries.yaml")
		require.NoError(t, err)
		r := play(context.Background(), args...)
		require.Error(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		// The third restart is seen either while k3s starts again or while systemd waits to
		// restart it: both are the unit's real state at that moment, as with systemd.
		assert.Regexp(t, `fatal: \[node2\]: FAILED! => .*k3s-agent is crash-looping: k3s exited and systemd restarted it 3 times since this task started it \(enabled, activating \((auto-restart|start)\)\); its journal ends: `, flat)
	})

	// The worker re-installed (a Pi re-flashed): no k3s, and none of /etc/rancher, so k3s makes
	// a new node password, which the server rejects while the Node node2 exists; k3s would
	// retry for ever. The play fails the host saying which Node to delete; deleted (its
	// password Secret goes with it), the same play converges.
	t.Run("node password", func(t *testing.T) {
		_, err := worker.Exec("/usr/local/bin/k3s-agent-uninstall.sh && rm -rf /etc/rancher/node")
		require.NoError(t, err)
		r := play(context.Background(), args...)
		require.Error(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "k3s-agent cannot join (enabled, activating (start)): the server rejected this host's node password, so k3s would retry for ever. The cluster has a Node node2 that joined with another password")
		assert.Contains(t, flat, "delete it (`kubectl delete node node2`: k3s deletes the Secret kube-system/node2.node-password.k3s with it)")
		assert.Contains(t, flat, "its journal ends: ")
		kc, _, err := b.Clients()
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, kc.CoreV1().Nodes().Delete(ctx, "node2", metav1.DeleteOptions{}))
		r = play(context.Background(), args...)
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "node2 Ready")
	})

	// With bind-address, k3s listens on that address (and the loopbacks: pkg/cluster/https.go,
	// util.ListenWithLoopback), and writes it into k3s.yaml: /readyz is asked there.
	t.Run("bind-address", func(t *testing.T) {
		bindVars := filepath.Join(dir, "bind.json")
		writeJSON(t, bindVars, map[string]any{"k8s_cluster_server_config": map[string]any{"bind-address": server.Addr}})
		r := play(context.Background(), append(args, "-e", "@"+bindVars)...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, 1, r.changed()["node1"], r.output)
		kubeconfig, err := server.Exec("grep 'server:' /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		assert.Equal(t, "    server: https://"+server.Addr+":6443\n", kubeconfig)
		_, err = server.Exec("curl -sk --max-time 2 https://127.0.0.1:6443/ping")
		assert.NoError(t, err, "the loopback too, as k3s's")
	})

	// k3s refuses to start a server with another token than its datastore was bootstrapped with;
	// the play refuses it first, writing nothing.
	t.Run("token changed", func(t *testing.T) {
		before, err := server.Exec("sha256sum /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		r := play(context.Background(), append(args, "-e", "k8s_cluster_token=another-cluster-secret-61f0")...)
		require.Error(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "k3s_config.token is another secret than the one this server's datastore was bootstrapped with (/var/lib/rancher/k3s/server/token)")
		assert.Contains(t, flat, "rotate it (playbooks/rotate_token.yml with the new one in k8s_cluster_new_token")
		assert.NotContains(t, r.output, "another-cluster-secret-61f0")
		after, err := server.Exec("sha256sum /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Equal(t, before, after, "nothing written")
		active, err := server.Exec("systemctl is-active k3s")
		require.NoError(t, err)
		assert.Equal(t, "active\n", active)
	})
}
