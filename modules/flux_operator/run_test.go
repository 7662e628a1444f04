package fluxoperator

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

func TestMergeValues(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "a.yaml")
	require.NoError(t, os.WriteFile(f1, []byte("web:\n  enabled: true\n  port: 9080\nlogLevel: info\n"), 0o600))
	f2 := filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(f2, []byte("logLevel: debug\n"), 0o600))
	got, err := mergeValues([]string{f1, f2}, map[string]any{"web": map[string]any{"enabled": false}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"web": map[string]any{"enabled": false, "port": float64(9080)}, "logLevel": "debug"}, got)

	_, err = mergeValues([]string{filepath.Join(dir, "missing.yaml")}, nil)
	assert.ErrorContains(t, err, "read values_files entry")
}

func TestSameValues(t *testing.T) {
	assert.True(t, sameValues(nil, map[string]any{}))
	assert.True(t, sameValues(map[string]any{"a": int64(1)}, map[string]any{"a": float64(1)}), "numbers compare by value")
	assert.False(t, sameValues(map[string]any{"a": 1}, map[string]any{"a": 2}))
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestNoOpShortcut(t *testing.T) {
	for v, want := range map[string]bool{"0.59.0": true, "v1.2.3": true, "1.2.3-rc.1": true, "": false, "0.59": false, "^0.59.0": false, ">=0.58.0": false, "0.59.x": false} {
		assert.Equal(t, want, isPinned(v), v)
	}
	assert.Equal(t, "flux-operator", refChartName("oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator"))
	assert.Equal(t, "flux-operator", refChartName("fluxrepo/flux-operator"))
	assert.Equal(t, "", refChartName(t.TempDir()), "a local chart's name is inside it")
}

func TestNotInProgress(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rel := func(started time.Time) *release.Release {
		return &release.Release{Name: "flux-operator", Namespace: "flux-system", Version: 3,
			Info: &release.Info{Status: release.StatusPendingUpgrade, LastDeployed: helmtime.Time{Time: started}}}
	}
	a := args{ReleaseName: "flux-operator", ReleaseNamespace: "flux-system", WaitTimeout: 300}
	for _, tc := range []struct {
		name       string
		elapsed    time.Duration
		inProgress bool
	}{
		{"just started", 2 * time.Second, true},
		{"within our own wait_timeout", 299 * time.Second, true},
		{"within the minute's margin", 359 * time.Second, true},
		{"past wait_timeout and the margin: interrupted", 360 * time.Second, false},
		{"hours ago: interrupted", 3 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := notInProgress(a, rel(start), start.Add(tc.elapsed))
			if !tc.inProgress {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "another operation (install/upgrade/rollback) is in progress")
			assert.Contains(t, err.Error(), "revision 3 has been pending-upgrade since 2026-12-01T10:00:00Z")
			assert.Contains(t, err.Error(), "after 2026-12-01T10:06:00Z")
		})
	}
	assert.NoError(t, notInProgress(a, rel(time.Time{}), start), "no start time: nothing to wait for")
}

func TestRegistryClientCAFile(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	_, err := registryClient(args{CAFile: notPEM, RegistryUsername: "u", RegistryPassword: "p"}, filepath.Join(dir, "registry.json"))
	assert.ErrorContains(t, err, "ca_file "+notPEM+" holds no PEM certificate")
	_, err = registryClient(args{CAFile: filepath.Join(dir, "missing.pem")}, filepath.Join(dir, "registry.json"))
	assert.ErrorContains(t, err, "read ca_file")
}

func TestCheckModeWithoutACluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "not-fetched-yet", "kubeconfig")
	chart := filepath.Join(golden.RepoRoot(t), "tests", "charts", "flux-operator")
	res, code, _ := ansibletest.Run(t, module, Entry.Run, map[string]any{"kubeconfig": kubeconfig, "chart_ref": chart,
		"values": map[string]any{"logLevel": "debug"}, "_ansible_check_mode": true, "_ansible_diff": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Contains(t, res["warnings"].([]any)[0], "kubeconfig "+kubeconfig+" does not exist yet")
	diff := res["diff"].(map[string]any)
	assert.Equal(t, "", diff["before"])
	assert.Contains(t, diff["after"], "kind: Deployment")
	assert.Contains(t, diff["after"], "--log-level=debug")
	assert.Equal(t, "flux-operator-0.0.0", res["release"].(map[string]any)["chart"])
	assert.NoFileExists(t, kubeconfig)
	assert.Regexp(t, `^v1\.\d+\.\d+$`, clientGoKubeVersion(), "the chart's kubeVersion is checked against a real release")
}

func TestUpToDate(t *testing.T) {
	rel := func(status release.Status, version string, values map[string]any) *release.Release {
		return &release.Release{Info: &release.Info{Status: status}, Chart: &chart.Chart{Metadata: &chart.Metadata{Version: version}}, Config: values}
	}
	for _, tc := range []struct {
		name string
		rel  *release.Release
		want bool
	}{
		{"none", nil, false},
		{"deployed, same version and values", rel(release.StatusDeployed, "0.58.0", map[string]any{"logLevel": "info"}), true},
		{"values of other keys", rel(release.StatusDeployed, "0.58.0", map[string]any{"replicas": 1}), false},
		{"another version", rel(release.StatusDeployed, "0.57.0", map[string]any{"logLevel": "info"}), false},
		{"other values", rel(release.StatusDeployed, "0.58.0", map[string]any{"logLevel": "debug"}), false},
		{"failed", rel(release.StatusFailed, "0.58.0", map[string]any{"logLevel": "info"}), false},
		{"pending", rel(release.StatusPendingUpgrade, "0.58.0", map[string]any{"logLevel": "info"}), false},
		{"uninstalled", rel(release.StatusUninstalled, "0.58.0", map[string]any{"logLevel": "info"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, upToDate(tc.rel, "0.58.0", map[string]any{"logLevel": "info"}))
		})
	}
	assert.True(t, upToDate(rel(release.StatusDeployed, "0.58.0", nil), "0.58.0", map[string]any{}), "no values and empty values")
	assert.True(t, upToDate(rel(release.StatusDeployed, "0.58.0", map[string]any{"replicas": float64(2)}), "0.58.0", map[string]any{"replicas": 2}),
		"a number from the task's JSON and from the release's store")
}

func TestLastDeployedBefore(t *testing.T) {
	rev := func(version int, status release.Status) *release.Release {
		return &release.Release{Version: version, Info: &release.Info{Status: status}}
	}
	pending := rev(5, release.StatusPendingUpgrade)
	for _, tc := range []struct {
		name    string
		history []*release.Release
		want    int // 0: none
	}{
		{"never deployed", []*release.Release{rev(1, release.StatusFailed), pending}, 0},
		{"the newest deployed or superseded before it", []*release.Release{rev(1, release.StatusSuperseded), rev(3, release.StatusDeployed), rev(2, release.StatusSuperseded), rev(4, release.StatusFailed), pending}, 3},
		{"not a newer one", []*release.Release{rev(2, release.StatusSuperseded), pending, rev(6, release.StatusDeployed)}, 2},
		{"unordered history", []*release.Release{pending, rev(4, release.StatusSuperseded), rev(1, release.StatusSuperseded)}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lastDeployedBefore(tc.history, pending)
			if tc.want == 0 {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Version)
		})
	}
}
