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

		// What is no etcd snapshot is refused before any server stops: a file
		// of another kind, and a copy of a real snapshot cut short.
		const db = "/var/lib/rancher/k3s/server/db"
		_, err = node1.Exec("head -c 6000 " + db + "/snapshots/" + snapshot + " >/var/lib/rancher/k3s/cut-snapshot")
		require.NoError(t, err)
		for file, why := range map[string]string{
			"/etc/passwd":                       "it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file)",
			"/var/lib/rancher/k3s/cut-snapshot": "it is cut short: its header counts ",
		} {
			r = run("restore.yml", with("k8s_cluster_restore_snapshot", file, "k8s_cluster_restore_confirmed", "true"))
			require.Error(t, r.err)
			assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "snapshot "+file+" is not an etcd snapshot k3s can restore: "+why)
			for _, h := range []string{"node1", "node2", "node3"} {
				out, err := b.Hosts.Host(h).Exec("systemctl is-active k3s")
				assert.NoError(t, err, "%s: nothing stopped for %s: %s", h, file, out)
			}
		}
		_, err = node1.Exec("rm -f /var/lib/rancher/k3s/cut-snapshot")
		require.NoError(t, err)

		// A cluster reset that fails (here: node1's etcd data is not where k3s
		// moves it from) leaves every server stopped and a mark on node1;
		// k8s.yml then refuses to start k3s there, where cluster-init would
		// start a new, empty cluster.
		const mark = db + "/gitops.k3s_flux-restore-pending"
		_, err = node1.Exec("mv " + db + "/etcd " + db + "/parked-etcd")
		require.NoError(t, err)
		r = run("restore.yml", with("k8s_cluster_restore_snapshot", snapshot, "k8s_cluster_restore_confirmed", "true"))
		require.Error(t, r.err)
		said := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, said, "k3s is stopped on every server, and disabled on this one (a reboot does not start it). k3s set nothing aside: "+db+"/etcd is as it was (missing: k3s needs it to restore; put the etcd data back there). To retry: fix the cause, then run playbooks/restore.yml again.")
		assert.Contains(t, said, "Until then "+mark+" stays, and k3s_node (playbook k8s.yml) refuses to start k3s here")
		_, err = node1.Exec("test -f " + mark)
		assert.NoError(t, err, "the mark is left on node1")
		out, err = node1.Exec("systemctl is-enabled k3s")
		assert.Error(t, err, "node1's k3s disabled, so that a reboot does not start a new cluster: %s", out)
		r = run("k8s.yml", with())
		require.Error(t, r.err, "k8s.yml would start a new, empty cluster on node1")
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), mark+" is there: an etcd restore failed on this server")
		for _, h := range []string{"node1", "node2", "node3"} {
			out, err := b.Hosts.Host(h).Exec("systemctl is-active k3s")
			assert.Error(t, err, "%s: k3s not started: %s", h, out)
		}
		_, err = node1.Exec("mv " + db + "/parked-etcd " + db + "/etcd")
		require.NoError(t, err)

		r = run("restore.yml", with("k8s_cluster_restore_snapshot", snapshot, "k8s_cluster_restore_confirmed", "true"))
		require.NoError(t, r.err, r.output)
		_, err = node1.Exec("test -e " + mark)
		assert.Error(t, err, "the restore that succeeded removed the mark")
		out, err = node1.Exec("systemctl is-enabled k3s")
		assert.NoError(t, err, "node1's k3s enabled again by the converge: %s", out)
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
		assert.Equal(t, 2, resets, "k3s server --cluster-reset ran twice with the snapshot: the reset that failed, the one that restored")
	})
}
