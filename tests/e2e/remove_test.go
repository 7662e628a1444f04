//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// etcdMembers is the k3s stand-in's model of the etcd member list.
func etcdMembers(t *testing.T, b *bed.Bed) []string {
	t.Helper()
	kc, _, err := b.Clients()
	require.NoError(t, err)
	cm, err := kc.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "k3s-etcd-members", metav1.GetOptions{})
	require.NoError(t, err)
	var out []string
	for name := range cm.Data {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// testRemoveNode runs the node removal subtests on the converged HA bed
// (3 servers, 1 agent): remove runs playbooks/remove_node.yml.
func testRemoveNode(t *testing.T, b *bed.Bed, remove func(args ...string) playResult) {
	kc, _, err := b.Clients()
	require.NoError(t, err)
	nodeGone := func(name string) bool {
		_, err := kc.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	require.Equal(t, []string{"node1", "node2", "node3"}, etcdMembers(t, b))

	t.Run("remove refusals", func(t *testing.T) {
		r := remove()
		require.Error(t, r.err)
		assert.Contains(t, r.output, "Name the nodes to remove with -l")
		// A group or a pattern would take every host it matches: refused, naming them.
		r = remove("-l", "k3s_workers")
		require.Error(t, r.err)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "-l must name each node to remove by its inventory name: k3s_workers is a group or pattern, which would remove node4; name them one by one (-l node4); nothing was changed.")
		r = remove("-l", "node3,node*")
		require.Error(t, r.err)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "node* is a group or pattern, which would remove node1, node2, node3, node4;")
		r = remove("-l", "node1")
		require.Error(t, r.err)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "node1 is the first controller, which k8s.yml starts the cluster on")
		// node2 stopped: removing node3 would leave node1 and node2, one of them running.
		_, err := b.Hosts.Host("node2").Exec("systemctl stop k3s")
		require.NoError(t, err)
		r = remove("-l", "node3")
		require.Error(t, r.err)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "Removing node3 would leave etcd without a quorum: of the servers that stay (node1, node2), only node1 run k3s")
		_, err = b.Hosts.Host("node2").Exec("systemctl start k3s")
		require.NoError(t, err)
		assert.Equal(t, []string{"node1", "node2", "node3"}, etcdMembers(t, b), "nothing removed")
	})

	t.Run("remove an agent and a server", func(t *testing.T) {
		r := remove("-l", "node4,node3")
		require.NoError(t, r.err, r.output)
		for _, name := range []string{"node3", "node4"} {
			assert.True(t, nodeGone(name), name)
			_, err := b.Hosts.Host(name).Exec("test ! -e /usr/local/bin/k3s && test ! -e /etc/rancher/k3s && test ! -e /var/lib/rancher/k3s")
			assert.NoError(t, err, "%s bare", name)
		}
		assert.Equal(t, []string{"node1", "node2"}, etcdMembers(t, b))
		// A snapshot before the server's removal (not before the agent's), on the first controller.
		taken := snapshotNamed(t, b.Hosts.Host("node1"), "pre-remove-node3")
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "Snapshot "+taken+" on node1: file://")
		r = remove("-l", "node4,node3")
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node3": 0, "node4": 0}, r.changed(), r.output)
	})
}
