//go:build e2e

package e2e

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// testRebuildFirst reinstalls the first controller of the converged HA bed
// (3 servers, 1 agent, on version): reset alone, as a rebuilt host comes
// back bare, then k8s.yml, which must join it to the running cluster
// rather than start a second one with cluster-init.
func testRebuildFirst(t *testing.T, b *bed.Bed, vars map[string]any, version string, run func(playbook string, v map[string]any, args ...string) playResult) {
	kc, _, err := b.Clients()
	require.NoError(t, err)
	node1 := b.Hosts.Host("node1")
	v := map[string]any{"k8s_cluster_k3s_version": version}
	for k, x := range vars {
		v[k] = x
	}
	members := func() map[string]string {
		cm, err := kc.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "k3s-etcd-members", metav1.GetOptions{})
		require.NoError(t, err)
		return cm.Data
	}

	t.Run("rebuild first", func(t *testing.T) {
		before := members()
		require.Len(t, before, 3)
		r := run("reset.yml", v, "-l", "node1", "-e", "k8s_cluster_reset_confirmed=true")
		require.NoError(t, r.err, r.output)
		_, err := node1.Exec("test ! -e /usr/local/bin/k3s && test ! -e /var/lib/rancher/k3s")
		require.NoError(t, err, "node1 bare")

		// From a fresh checkout too (an AWX job: no kubeconfig from an earlier run): the old Node is
		// deleted through a kubeconfig read from node2, and the run writes the project's again.
		require.NoError(t, os.Remove(v["k8s_cluster_kubeconfig_dest"].(string)))
		const fresh = "Read the admin kubeconfig from a server, as k8s_cluster_kubeconfig_dest is missing, from node2"
		r = run("k8s.yml", v, "--check")
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, fresh)
		_, err = node1.Exec("test ! -e /usr/local/bin/k3s")
		assert.NoError(t, err, "check mode installs nothing")
		_, err = kc.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
		assert.NoError(t, err, "nor deletes the old Node")

		r = run("k8s.yml", v, "-vvv")
		require.NoError(t, r.err, r.output)
		t.Logf("first controller rebuilt and rejoined: %s", r.duration)
		assert.Contains(t, r.output, fresh)
		assert.FileExists(t, v["k8s_cluster_kubeconfig_dest"].(string), "written again")
		// The token read from node2 and given to node1 is nowhere in the -vvv output.
		nodeToken, err := b.Hosts.Host("node2").Exec("cat /var/lib/rancher/k3s/server/node-token")
		require.NoError(t, err)
		_, secret, _ := strings.Cut(strings.TrimSpace(nodeToken), "::server:")
		require.NotEmpty(t, secret)
		assert.NotContains(t, r.output, secret)
		cfg, err := node1.Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Contains(t, cfg, "server: https://"+b.Hosts.Host("node2").Addr+":6443", "joined node2, the first running controller")
		assert.NotContains(t, cfg, "cluster-init")
		after := members()
		assert.Equal(t, []string{"node1", "node2", "node3"}, slices.Sorted(maps.Keys(after)), "one cluster, its members as before")
		assert.NotEqual(t, before["node1"], after["node1"], "node1 a new member")
		assert.Equal(t, before["node2"], after["node2"])
		assert.Contains(t, r.output, "node1 Ready control-plane")
		assert.Contains(t, r.output, "node4 Ready <none>")

		r = run("k8s.yml", v)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "node4": 0, "localhost": 0}, r.changed(), "the rejoined config kept: %s", r.output)
	})
}
