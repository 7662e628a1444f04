//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// testRestore takes a snapshot of the converged HA bed (3 servers, 1 agent,
// on version), changes the cluster after it and restores it with
// playbooks/restore.yml: what was deleted is back, what was made is gone,
// one cluster of the same members, every Node Ready.
func testRestore(t *testing.T, b *bed.Bed, vars map[string]any, version string, run func(playbook string, v map[string]any, args ...string) playResult) {
	kc, _, err := b.Clients()
	require.NoError(t, err)
	ctx := context.Background()
	node1 := b.Hosts.Host("node1")
	with := func(kv ...string) map[string]any {
		v := map[string]any{"k8s_cluster_k3s_version": version}
		for k, x := range vars {
			v[k] = x
		}
		for i := 0; i < len(kv); i += 2 {
			v[kv[i]] = kv[i+1]
		}
		return v
	}
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"kept": name}}
	}
	exists := func(name string) bool {
		_, err := kc.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}

	t.Run("restore", func(t *testing.T) {
		_, err := kc.CoreV1().ConfigMaps("default").Create(ctx, configMap("before"), metav1.CreateOptions{})
		require.NoError(t, err)
		r := run("snapshot.yml", with("k8s_cluster_snapshot_name", "before-restore"))
		require.NoError(t, r.err, r.output)
		snapshot := snapshotNamed(t, node1, "before-restore")
		// After the snapshot: one deleted, one made.
		require.NoError(t, kc.CoreV1().ConfigMaps("default").Delete(ctx, "before", metav1.DeleteOptions{}))
		_, err = kc.CoreV1().ConfigMaps("default").Create(ctx, configMap("after"), metav1.CreateOptions{})
		require.NoError(t, err)

		r = run("restore.yml", with("k8s_cluster_restore_snapshot", snapshot))
		require.Error(t, r.err)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "Not confirmed (answer yes, or set k8s_cluster_restore_confirmed=true): the cluster was to be taken back to etcd snapshot "+snapshot+"; nothing was changed.")
		r = run("restore.yml", with("k8s_cluster_restore_snapshot", "no-such-snapshot", "k8s_cluster_restore_confirmed", "true"))
		require.Error(t, r.err)
		assert.Contains(t, r.output, "snapshot /var/lib/rancher/k3s/server/db/snapshots/no-such-snapshot: no such file (kept in /var/lib/rancher/k3s/server/db/snapshots: ")
		assert.False(t, exists("before"), "nothing restored")
		out, err := b.Hosts.Host("node2").Exec("systemctl is-active k3s")
		assert.NoError(t, err, "nothing stopped: %s", out)

		r = run("restore.yml", with("k8s_cluster_restore_snapshot", snapshot, "k8s_cluster_restore_confirmed", "true"))
		require.NoError(t, r.err, r.output)
		t.Logf("restore of 3+1 nodes: %s", r.duration)
		assert.True(t, exists("before"), "deleted after the snapshot: back")
		assert.False(t, exists("after"), "made after the snapshot: gone")
		assert.Equal(t, []string{"node1", "node2", "node3"}, etcdMembers(t, b), "one cluster, its members as before")
		assert.Contains(t, r.output, "node4 Ready <none>")
		for _, h := range []string{"node2", "node3"} {
			out, err := b.Hosts.Host(h).Exec("ls -d /var/lib/rancher/k3s/server/db.pre-restore-*")
			assert.NoError(t, err, "%s: its old etcd data kept aside: %s", h, out)
		}
		runs, err := bed.Invocations(node1)
		require.NoError(t, err)
		resets := 0
		for _, run := range runs {
			if run.HasArg("--cluster-reset-restore-path=/var/lib/rancher/k3s/server/db/snapshots/" + snapshot) {
				resets++
			}
		}
		assert.Equal(t, 1, resets, "k3s server --cluster-reset ran once, with the snapshot")
	})
}
