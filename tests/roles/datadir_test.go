package roles

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

// configuredDataDir is how role k8s_cluster passes a module the data-dir
// of the host's k3s config (k3s's default when none sets it).
const configuredDataDir = "{{ _k8s_cluster_config['data-dir'] | default(omit) }}"

// moduleTasks lists the tasks of a task file (blocks walked) that call
// module, each with its arguments and where it is.
func moduleTasks(tasks []map[string]any, module, where string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for i, task := range tasks {
		at := fmt.Sprintf("%s[%d] %v", where, i, task["name"])
		if args, ok := task[module].(map[string]any); ok {
			out[at] = args
		}
		for _, key := range []string{"block", "rescue", "always"} {
			for k, v := range moduleTasks(asList(task[key]), module, at+"."+key) {
				out[k] = v
			}
		}
	}
	return out
}

// TestUninstallHonoursDataDir: every task of role k8s_cluster that takes
// k3s off a node (k3s_node, state absent: reset and remove_node) passes
// the configured data-dir, so a custom one (etcd, the CA keys, the token,
// the snapshots) is removed as the default one is; k3s's own uninstall
// script knows only /var/lib/rancher/k3s.
func TestUninstallHonoursDataDir(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(golden.RepoRoot(t), "roles", "k8s_cluster", "tasks", "*.yml"))
	require.NoError(t, err)
	absent := map[string]map[string]any{}
	for _, f := range files {
		var tasks []map[string]any
		readYAML(t, f, &tasks)
		for at, args := range moduleTasks(tasks, "gitops.k3s_flux.k3s_node", filepath.Base(f)) {
			if args["state"] == "absent" {
				absent[at] = args
			}
		}
	}
	require.NotEmpty(t, absent, "uninstall.yml's task")
	for at, args := range absent {
		assert.Equal(t, configuredDataDir, args["data_dir"], at)
	}
}

// TestStartsFindTheRestoreMark: every task of role k8s_cluster that starts
// k3s (k3s_node, state present) passes the configured data-dir, under which
// a failed restore leaves its mark, so that a custom data-dir's mark stops
// k3s from starting a new, empty cluster as the default one's does; the
// play's own tasks pass k8s_cluster_restore_abandon. The restore's reset
// looks for a snapshot by name in the configured etcd-snapshot-dir.
func TestStartsFindTheRestoreMark(t *testing.T) {
	dir := filepath.Join(golden.RepoRoot(t), "roles", "k8s_cluster", "tasks")
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	require.NoError(t, err)
	starts, resets := 0, 0
	for _, f := range files {
		var tasks []map[string]any
		readYAML(t, f, &tasks)
		for at, args := range moduleTasks(tasks, "gitops.k3s_flux.k3s_node", filepath.Base(f)) {
			if args["state"] == nil || args["state"] == "present" {
				starts++
				assert.Equal(t, configuredDataDir, args["data_dir"], at)
			}
			if filepath.Base(f) == "main.yml" {
				assert.Equal(t, "{{ k8s_cluster_restore_abandon }}", args["abandon_restore"], at)
			}
		}
		for at, args := range moduleTasks(tasks, "gitops.k3s_flux.k3s_etcd_restore", filepath.Base(f)) {
			if args["step"] == "reset" {
				resets++
				assert.Equal(t, "{{ _k8s_cluster_config['etcd-snapshot-dir'] | default(omit) }}", args["snapshot_dir"], at)
			}
		}
	}
	assert.GreaterOrEqual(t, starts, 4, "main.yml's three and reboot_one.yml's")
	assert.Equal(t, 2, resets, "restore.yml's check and its reset")
}
