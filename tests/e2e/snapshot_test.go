//go:build e2e

package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

const (
	// snapshotDir is k3s's default etcd-snapshot-dir.
	snapshotDir = "/var/lib/rancher/k3s/server/db/snapshots"
	// The S3 credentials of a node's config, never to be shown.
	e2eS3AccessKey = "AKIAE2ESNAPSHOT7731"
	e2eS3SecretKey = "e2e-s3-secret-9f2d6c"
)

// snapshotsOn lists the etcd snapshots k3s keeps on h.
func snapshotsOn(t *testing.T, h *testhosts.Host) []string {
	t.Helper()
	out, err := h.Exec("ls -1 " + snapshotDir + " 2>/dev/null || true")
	require.NoError(t, err)
	return strings.Fields(out)
}

// snapshotNamed is the one snapshot on h whose name is name-<node>-<unix time>.
func snapshotNamed(t *testing.T, h *testhosts.Host, name string) string {
	t.Helper()
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `-` + h.Name + `-\d{10}$`)
	var found []string
	for _, s := range snapshotsOn(t, h) {
		if re.MatchString(s) {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "one snapshot %s-%s-<time> on %s", name, h.Name, h.Name)
	assertRootOnly(t, h, snapshotDir+"/"+found[0])
	return found[0]
}

// testSnapshots runs playbooks/snapshot.yml on the converged HA bed (3
// servers, 1 agent); the upgrades before it left their snapshots.
func testSnapshots(t *testing.T, b *bed.Bed, vars map[string]any, run func(playbook string, v map[string]any, args ...string) playResult) {
	node1 := b.Hosts.Host("node1")
	named := func(name string) map[string]any {
		v := map[string]any{"k8s_cluster_snapshot_name": name}
		for k, x := range vars {
			v[k] = x
		}
		return v
	}

	t.Run("snapshot", func(t *testing.T) {
		// (Check mode, which takes none, is shown by the upgrade's check.)
		kept := snapshotsOn(t, node1) // the upgrades' when run after them
		saves := func() int {
			runs, err := bed.Invocations(node1)
			require.NoError(t, err)
			n := 0
			for _, run := range runs {
				if run.Command == "etcd-snapshot save" {
					n++
				}
			}
			return n
		}
		savedBefore := saves()
		r := run("snapshot.yml", named("before-flux"))
		require.NoError(t, r.err, r.output)
		taken := snapshotNamed(t, node1, "before-flux")
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "Snapshot "+taken+" on node1: file://"+snapshotDir+"/"+taken+".")
		// Oldest first: by the time k3s puts at the end of each name.
		slices.SortStableFunc(kept, func(a, b string) int {
			return strings.Compare(a[strings.LastIndex(a, "-"):], b[strings.LastIndex(b, "-"):])
		})
		assert.Contains(t, flat, "Kept there: "+strings.Join(append(kept, taken), ", ")+". ", "the kept ones, oldest first, and no more")
		assert.Contains(t, flat, "It restores only with the token of this cluster, which k3s made: keep /var/lib/rancher/k3s/server/token (on node1) with your snapshots; a cluster rebuilt from scratch has another (k8s_cluster_restore_token).")
		assert.Equal(t, map[string]int{"node1": 1}, r.changed(), "one task, run once: the snapshot on the first controller")
		stat, err := node1.Exec("stat -c '%a' " + snapshotDir)
		require.NoError(t, err)
		assert.Equal(t, "700\n", stat)
		assert.Equal(t, savedBefore+1, saves(), "k3s etcd-snapshot save ran once more")
	})

	// k3s's etcd-snapshot reads the S3 settings from the server's config files: a drop-in with
	// them (as k8s_cluster_server_config renders them) makes k3s upload to the bucket, which the
	// test bed has none of; the failure stops the play with k3s's words, the credentials masked.
	t.Run("s3 masked", func(t *testing.T) {
		dropin := "/etc/rancher/k3s/config.yaml.d/90-s3.yaml"
		_, err := node1.Exec("mkdir -p /etc/rancher/k3s/config.yaml.d && printf 'etcd-s3: true\\netcd-s3-bucket: backups\\netcd-s3-access-key: " +
			e2eS3AccessKey + "\\netcd-s3-secret-key: " + e2eS3SecretKey + "\\n' > " + dropin + " && chmod 600 " + dropin)
		require.NoError(t, err)
		defer func() {
			_, err := node1.Exec("rm -f " + dropin + " && rmdir /etc/rancher/k3s/config.yaml.d")
			assert.NoError(t, err)
		}()
		before := snapshotsOn(t, node1)
		r := run("snapshot.yml", named("with-s3"), "-vvv")
		require.Error(t, r.err)
		assert.Contains(t, r.output, `k3s etcd-snapshot save --name with-s3: failed to initialize S3 client: bucket \"backups\"`)
		assert.NotContains(t, r.output, e2eS3AccessKey)
		assert.NotContains(t, r.output, e2eS3SecretKey)
		assert.Equal(t, before, snapshotsOn(t, node1), "none taken")
	})
}
