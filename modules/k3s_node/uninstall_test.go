package k3snodemodule

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func installedNode(t *testing.T, where k3snode.Paths, scripts ...string) *fakeNode {
	t.Helper()
	f := newFakeNode()
	f.version = testVersion
	f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
	require.NoError(t, os.MkdirAll(where.BinDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(where.BinDir, "k3s"), []byte("k3s"), 0o755))
	for _, s := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(where.BinDir, s), []byte("#!/bin/sh\n"), 0o755))
	}
	return f
}

func TestUninstall(t *testing.T) {
	where := testPaths(t)
	f := installedNode(t, where, "k3s-uninstall.sh")
	absent := map[string]any{"state": "absent", "version": nil}

	res, code := runOn(t, f, where, with(absent, "_ansible_check_mode", true, "_ansible_diff", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, testVersion, res["previous_version"])
	assert.Empty(t, f.changes(), "check mode runs nothing")
	assert.DirExists(t, where.DataDir)
	assert.Contains(t, res["diff"].(map[string]any)["before"], "k3s "+testVersion+" installed")

	res, code = runOn(t, f, where, absent)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, []string{"sh " + filepath.Join(where.BinDir, "k3s-uninstall.sh")}, f.changes())
	assert.NoDirExists(t, where.DataDir, "what the script left is removed")
	assert.NoFileExists(t, where.Kubeconfig)

	res, code = runOn(t, f, where, absent)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "bare already")
	assert.Equal(t, []any{}, res["actions"])
}

func TestUninstallBothRolesAgentFirst(t *testing.T) {
	where := testPaths(t)
	f := installedNode(t, where, "k3s-uninstall.sh", "k3s-agent-uninstall.sh")
	res, code := runOn(t, f, where, map[string]any{"state": "absent", "version": nil})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, []string{"sh " + filepath.Join(where.BinDir, "k3s-agent-uninstall.sh"), "sh " + filepath.Join(where.BinDir, "k3s-uninstall.sh")}, f.changes())
}

func TestUninstallWithoutScriptsIsRefused(t *testing.T) {
	where := testPaths(t)
	f := installedNode(t, where)
	res, code := runOn(t, f, where, map[string]any{"state": "absent", "version": nil})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "neither k3s-agent-uninstall.sh nor k3s-uninstall.sh is there")
	assert.DirExists(t, where.DataDir, "nothing removed")
}

func TestPresentNeedsRoleAndVersion(t *testing.T) {
	where := testPaths(t)
	res, code := runOn(t, newFakeNode(), where, map[string]any{"version": nil})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "state is present but all of the following are missing: role")
}

func TestK3sShaped(t *testing.T) {
	for dir, want := range map[string]bool{
		"/etc/rancher/k3s": true, "/var/lib/rancher/k3s": true, "/mnt/ssd/k3s": true, "/data/k3s-data": true, "/var/lib/rancher/k3s/": true,
		"/": false, "/root": false, "/home/pi": false, "/home/k3s": false, "/root/.kube": false, "/home/pi/.kube": false,
		"/etc": false, "/var/lib": false, "relative/k3s": false, "/var/lib/rancher/k3s/..": false, "": false,
	} {
		assert.Equal(t, want, k3snode.K3sShaped(dir), dir)
	}
}

// A kubeconfig_path in a home directory would have state=absent remove that
// whole directory (.ssh and all): refused before anything runs.
func TestUninstallRefusesDirectoriesNotK3ss(t *testing.T) {
	where := testPaths(t)
	f := installedNode(t, where, "k3s-uninstall.sh")
	home := filepath.Join(t.TempDir(), "home", "pi")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	for option, value := range map[string]string{"kubeconfig_path": filepath.Join(home, "k3s.yaml"), "data_dir": home} {
		res, code := runOn(t, f, where, map[string]any{"state": "absent", "version": nil, option: value})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], option+": state=absent removes "+home+", which is not a directory k3s makes")
		assert.Contains(t, res["msg"], "nothing was changed")
	}
	assert.Empty(t, f.changes(), "no uninstall script ran")
	assert.DirExists(t, filepath.Join(home, ".ssh"))
	assert.DirExists(t, where.DataDir)
}
