//go:build integration

package fluxoperator

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

func TestFluxOperatorAgainstRegistryAndAPIServer(t *testing.T) {
	b := bed.Start(t, bed.Options{Name: "k3sfo", Subnet: "10.213.5"})
	ctx := t.Context()
	require.NoError(t, b.AddNode(ctx, "worker"))
	kc, _, err := b.Clients()
	require.NoError(t, err)

	base := func(version string, values map[string]any) map[string]any {
		return map[string]any{"kubeconfig": b.Kubeconfig, "chart_ref": b.Registry.ChartRef(), "chart_version": version,
			"plain_http": true, "values": values}
	}
	op := func(args map[string]any) (map[string]any, int) {
		t.Helper()
		res, code, _ := ansibletest.Run(t, module, Entry.Run, args)
		return res, code
	}

	t.Run("check mode installs nothing", func(t *testing.T) {
		args := base("0.58.0", nil)
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Contains(t, res["diff"].(map[string]any)["after"], "kind: Deployment")
		_, err := kc.AppsV1().Deployments("flux-system").Get(ctx, "flux-operator", metav1.GetOptions{})
		assert.Error(t, err)
	})

	t.Run("installs from the OCI registry and waits", func(t *testing.T) {
		start := time.Now()
		res, code := op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		t.Logf("install: %s", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, true, res["changed"])
		rel := res["release"].(map[string]any)
		assert.Equal(t, "flux-operator-0.58.0", rel["chart"])
		assert.Equal(t, "deployed", rel["status"])
		dep, err := kc.AppsV1().Deployments("flux-system").Get(ctx, "flux-operator", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(1), dep.Status.AvailableReplicas)
	})

	t.Run("a second run is a no-op", func(t *testing.T) {
		start := time.Now()
		res, code := op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		t.Logf("flux_operator no-op run: %s", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, float64(1), res["release"].(map[string]any)["revision"])
	})

	t.Run("upgrades to the second chart version with the manifest diff", func(t *testing.T) {
		args := base("0.59.0", nil)
		args["_ansible_diff"] = true
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, "flux-operator-0.59.0", res["release"].(map[string]any)["chart"])
		diff := res["diff"].(map[string]any)
		assert.Contains(t, diff["before"], "v0.58.0")
		assert.Contains(t, diff["after"], "v0.59.0")
	})

	t.Run("a values change upgrades", func(t *testing.T) {
		res, code := op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		res, _ = op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		assert.Equal(t, false, res["changed"])
	})

	t.Run("a failed upgrade is rolled back (atomic)", func(t *testing.T) {
		unschedulable := base("0.59.0", map[string]any{"logLevel": "debug", "resources": map[string]any{"requests": map[string]any{"cpu": "1000"}, "limits": map[string]any{"cpu": "1000"}}})
		unschedulable["wait_timeout"] = 5
		res, code := op(unschedulable)
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "rolled back")
		assert.Contains(t, res["msg"], "timed out after 5s waiting for Deployment flux-system/")
		res, code = op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"], "the rollback restored the last good values")
	})

	releases := func(t *testing.T) *helm {
		t.Helper()
		h, err := newHelm(args{Connection: connection(b.Kubeconfig), ReleaseNamespace: "flux-system", PlainHTTP: true}, t.TempDir(), false)
		require.NoError(t, err)
		t.Cleanup(h.cleanup)
		return h
	}
	// leavePending marks the last revision as an interrupted run left it:
	// pending, and started an hour ago.
	leavePending := func(t *testing.T, status release.Status) {
		t.Helper()
		h := releases(t)
		rel, err := h.cfg.Releases.Last("flux-operator")
		require.NoError(t, err)
		rel.Info.Status = status
		rel.Info.LastDeployed = helmtime.Time{Time: time.Now().Add(-time.Hour)}
		require.NoError(t, h.cfg.Releases.Update(rel))
	}

	t.Run("a second run while the first is still upgrading fails and undoes nothing", func(t *testing.T) {
		// The first run's new Pod waits for a node labelled bed/slot=late,
		// so its upgrade stays pending until the test labels one.
		first := base("0.59.0", map[string]any{"logLevel": "debug", "nodeSelector": map[string]any{"bed/slot": "late"}})
		done := make(chan map[string]any, 1)
		start := time.Now()
		go func() {
			res, _, _ := ansibletest.Run(t, module, Entry.Run, first)
			done <- res
		}()
		h := releases(t)
		var pending *release.Release
		for pending == nil {
			select {
			case res := <-done:
				require.FailNow(t, "the first run ended before its upgrade was pending", "%v", res["msg"])
			case <-time.After(100 * time.Millisecond):
			}
			if rel, err := h.cfg.Releases.Last("flux-operator"); err == nil && rel.Info.Status == release.StatusPendingUpgrade {
				pending = rel
			}
		}

		for _, checkMode := range []bool{false, true} {
			second := base("0.59.0", map[string]any{"logLevel": "info"})
			second["_ansible_check_mode"] = checkMode
			res, code := op(second)
			assert.Equal(t, 1, code, "check mode %v", checkMode)
			assert.Contains(t, res["msg"], "another operation (install/upgrade/rollback) is in progress", "check mode %v", checkMode)
			assert.Contains(t, res["msg"], fmt.Sprintf("revision %d has been pending-upgrade", pending.Version))
			assert.Equal(t, false, res["changed"])
		}
		rel, err := h.cfg.Releases.Last("flux-operator")
		require.NoError(t, err)
		assert.Equal(t, pending.Version, rel.Version, "the second run made no revision")
		assert.Equal(t, release.StatusPendingUpgrade, rel.Info.Status, "the second run neither rolled back nor recovered the first one's upgrade")

		node, err := kc.CoreV1().Nodes().Get(ctx, "worker", metav1.GetOptions{})
		require.NoError(t, err)
		node.Labels["bed/slot"] = "late"
		_, err = kc.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		require.NoError(t, err)
		res := <-done
		t.Logf("first run finished %s after it started, once a node matched", time.Since(start).Round(time.Millisecond))
		require.NotEqual(t, true, res["failed"], res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, "deployed", res["release"].(map[string]any)["status"])
		assert.Equal(t, float64(pending.Version), res["release"].(map[string]any)["revision"], "the first run completed its own revision")
		res, code := op(first)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
	})

	t.Run("a release left pending is recovered", func(t *testing.T) {
		leavePending(t, release.StatusPendingUpgrade)

		res, code := op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, res["recovered"], "rolled back")
		assert.Contains(t, res["warnings"].([]any)[0], "was pending-upgrade")
		assert.Equal(t, "deployed", res["release"].(map[string]any)["status"])
	})

	t.Run("a release Flux adopted is left alone", func(t *testing.T) {
		dep, err := kc.AppsV1().Deployments("flux-system").Get(ctx, "flux-operator", metav1.GetOptions{})
		require.NoError(t, err)
		dep.Labels["helm.toolkit.fluxcd.io/name"] = "flux-operator"
		_, err = kc.AppsV1().Deployments("flux-system").Update(ctx, dep, metav1.UpdateOptions{})
		require.NoError(t, err)
		res, code := op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["adopted"])
		assert.Equal(t, false, res["changed"])
	})

	t.Run("state absent uninstalls", func(t *testing.T) {
		args := base("0.59.0", nil)
		args["state"], args["force"] = "absent", true
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		res, _ = op(args)
		assert.Equal(t, false, res["changed"])
	})

	t.Run("a release left pending-install is reinstalled", func(t *testing.T) {
		res, code := op(base("0.59.0", nil))
		require.Equal(t, 0, code, res["msg"])
		leavePending(t, release.StatusPendingInstall)

		res, code = op(base("0.59.0", nil))
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, res["recovered"], "uninstalled revision 1, left pending-install")
		assert.Equal(t, "deployed", res["release"].(map[string]any)["status"])
	})

	t.Run("ca_file and registry credentials together pull from a private TLS registry", func(t *testing.T) {
		private := func(password string, withCA bool) map[string]any {
			args := base("0.58.0", nil)
			args["chart_ref"], args["plain_http"] = b.Registry.TLSChartRef(), false
			args["registry_username"], args["registry_password"] = b.Registry.Username, password
			if withCA {
				args["ca_file"] = b.Registry.CAFile
			}
			return args
		}
		res, code, out := ansibletest.Run(t, module, Entry.Run, private("wrong-password-1d9e", true))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "401")
		assert.NotContains(t, out, "wrong-password-1d9e")

		res, code, out = ansibletest.Run(t, module, Entry.Run, private(b.Registry.Password, false))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "certificate signed by unknown authority")
		assert.NotContains(t, out, b.Registry.Password)

		res, code, out = ansibletest.Run(t, module, Entry.Run, private(b.Registry.Password, true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, "flux-operator-0.58.0", res["release"].(map[string]any)["chart"])
		assert.NotContains(t, out, b.Registry.Password)
	})

	t.Run("the registry down during an upgrade leaves the release as it was; the next run upgrades", func(t *testing.T) {
		h := releases(t)
		before, err := h.cfg.Releases.Last("flux-operator")
		require.NoError(t, err)
		require.Equal(t, "0.58.0", before.Chart.Metadata.Version)
		require.NoError(t, b.Registry.Pause())
		start := time.Now()
		res, code := op(base("0.59.0", nil))
		t.Logf("failed in %s with the registry down", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "find chart "+b.Registry.ChartRef())
		assert.Contains(t, res["msg"], "connection refused")
		assert.Equal(t, false, res["changed"])
		after, err := h.cfg.Releases.Last("flux-operator")
		require.NoError(t, err)
		assert.Equal(t, before.Version, after.Version, "no new revision")
		assert.Equal(t, release.StatusDeployed, after.Info.Status)
		assert.Equal(t, "0.58.0", after.Chart.Metadata.Version)

		require.NoError(t, b.Registry.Resume())
		start = time.Now()
		res, code = op(base("0.59.0", nil))
		require.Equal(t, 0, code, res["msg"])
		t.Logf("upgraded %s after the registry came back", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, "flux-operator-0.59.0", res["release"].(map[string]any)["chart"])
	})

	t.Run("a missing chart version fails clearly", func(t *testing.T) {
		res, code := op(base("9.9.9", nil))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "find chart")
		assert.Contains(t, res["msg"], `chart_version "9.9.9"`)
	})
}

// connection is a Connection for a kubeconfig file.
func connection(kubeconfig string) kube.Connection { return kube.Connection{Kubeconfig: kubeconfig} }
