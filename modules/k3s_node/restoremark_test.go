package k3snodemodule

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func TestRestoreRefusal(t *testing.T) {
	said := "restore started at unix time 1764910000\nk3s server --cluster-reset ...: etcd: no space left on device. k3s moved the etcd data it had to /d/server/db/etcd-old-1764910001.\n"
	for _, tc := range []struct {
		name    string
		role    string
		content string
		present bool
		abandon bool
		err     string
		warning string
	}{
		{name: "no mark", role: "server"},
		{name: "an agent: no restore runs there", role: "agent", content: said, present: true},
		{name: "a failed restore's mark", role: "server", content: said, present: true,
			err: "/d/mark is there: an etcd restore failed on this server, and k3s started now would run on what is left of its etcd data (with cluster-init, a new, empty cluster). " +
				"Finish the restore (playbooks/restore.yml) or roll back as it said, then remove /d/mark; or set abandon_restore (-e k8s_cluster_restore_abandon=true) to start k3s anyway. " +
				"The restore said: k3s server --cluster-reset ...: etcd: no space left on device. k3s moved the etcd data it had to /d/server/db/etcd-old-1764910001.; nothing was changed"},
		{name: "a mark without words", role: "server", present: true,
			err: "/d/mark is there: an etcd restore failed on this server, and k3s started now would run on what is left of its etcd data (with cluster-init, a new, empty cluster). " +
				"Finish the restore (playbooks/restore.yml) or roll back as it said, then remove /d/mark; or set abandon_restore (-e k8s_cluster_restore_abandon=true) to start k3s anyway; nothing was changed"},
		{name: "abandoned", role: "server", content: said, present: true, abandon: true,
			warning: "abandon_restore: k3s starts although an etcd restore failed on this server (/d/mark, removed now); what it said: k3s server --cluster-reset ...: etcd: no space left on device. k3s moved the etcd data it had to /d/server/db/etcd-old-1764910001."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warning, err := restoreRefusal(tc.role, "/d/mark", tc.content, tc.present, tc.abandon)
			assert.Equal(t, tc.warning, warning)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.err)
		})
	}
}

// TestRestoreMarkStopsTheStart: on a server with the mark, k3s_node changes
// nothing, in check mode too; abandon_restore starts k3s and removes it.
func TestRestoreMarkStopsTheStart(t *testing.T) {
	where := testPaths(t)
	mark := k3snode.RestoreMark(where.DataDir)
	require.NoError(t, os.MkdirAll(where.DataDir+"/server/db", 0o700))
	require.NoError(t, os.WriteFile(mark, []byte("restore started at unix time 1\nk3s: boom\n"), 0o600))
	stopped := func(f *fakeNode) {
		f.version = testVersion
		f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true}
	}
	for _, check := range []bool{true, false} {
		f := newFakeNode()
		stopped(f)
		res, code := runOn(t, f, where, map[string]any{"role": "server", "_ansible_check_mode": check})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], mark+" is there: an etcd restore failed on this server")
		assert.Empty(t, f.changes(), "nothing started")
		assert.FileExists(t, mark)
	}
	f := newFakeNode()
	stopped(f)
	res, code := runOn(t, f, where, map[string]any{"role": "server", "abandon_restore": true, "wait": false})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, []string{"systemctl start --no-block k3s.service"}, f.changes())
	assert.NoFileExists(t, mark, "removed once k3s was started")
}
