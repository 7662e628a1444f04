package fluxoperator

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmkube "helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

// flakyWaitClient is Helm's printing fake whose next Wait fails, as a
// rollout that does not finish in time.
type flakyWaitClient struct {
	kubefake.PrintingKubeClient
	mu       sync.Mutex
	failNext bool
}

func (f *flakyWaitClient) Wait(resources helmkube.ResourceList, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext {
		f.failNext = false
		return errors.New("timed out waiting for the condition")
	}
	return nil
}

// memoryHelm is one Helm configuration over a memory release store and an
// in-memory cluster, kept across the runs of a test as a cluster would be.
type memoryHelm struct {
	cfg     *action.Configuration
	kube    *flakyWaitClient
	cluster *kubetest.Cluster
}

func newMemoryHelm() *memoryHelm {
	m := &memoryHelm{kube: &flakyWaitClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}}, cluster: kubetest.New()}
	mem := driver.NewMemory()
	mem.SetNamespace("flux-system")
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: kubetest.ServerVersion, Major: "1", Minor: "37"}
	m.cfg = &action.Configuration{Releases: storage.Init(mem), KubeClient: m.kube, Capabilities: caps, Log: func(string, ...any) {}}
	return m
}

// connect hands each run its own copy of the configuration (a check-mode
// install swaps the copy's store and client), over the same release store
// and kube client.
func (m *memoryHelm) connect(_ args, tmpDir string, _ bool) (*helm, error) {
	cfg := *m.cfg
	return &helm{cfg: &cfg, home: filepath.Join(tmpDir, "helm"), kube: m.cluster.Clients()}, nil
}

func (m *memoryHelm) last(t *testing.T) *release.Release {
	t.Helper()
	rel, err := m.cfg.Releases.Last("flux-operator")
	require.NoError(t, err)
	return rel
}

// testCharts packages the test chart at the given versions as local .tgz files.
func testCharts(t *testing.T, versions ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for _, v := range versions {
		ch, err := loader.LoadDir(filepath.Join(golden.RepoRoot(t), "tests", "charts", "flux-operator"))
		require.NoError(t, err)
		ch.Metadata.Version, ch.Metadata.AppVersion = v, "v"+v
		path, err := chartutil.Save(ch, dir)
		require.NoError(t, err)
		out[v] = path
	}
	return out
}

func TestReleaseDecisions(t *testing.T) {
	charts := testCharts(t, "0.58.0", "0.59.0")
	m := newMemoryHelm()
	op := func(args map[string]any) (map[string]any, int) {
		t.Helper()
		args["wait_timeout"] = 30
		res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return run(ctx, req, m.connect)
		}, args)
		return res, code
	}
	base := func(version string, values map[string]any) map[string]any {
		return map[string]any{"chart_ref": charts[version], "chart_version": version, "values": values}
	}

	t.Run("check mode renders for the cluster's version and installs nothing", func(t *testing.T) {
		args := base("0.58.0", nil)
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Contains(t, res["diff"].(map[string]any)["after"], "kind: Deployment")
		_, err := m.cfg.Releases.Last("flux-operator")
		assert.Error(t, err, "no release stored")
	})

	t.Run("installs, then a second run is a no-op", func(t *testing.T) {
		res, code := op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, map[string]any{"name": "flux-operator", "namespace": "flux-system", "revision": float64(1), "chart": "flux-operator-0.58.0",
			"app_version": "v0.58.0", "status": "deployed"}, res["release"])
		res, code = op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, 1, m.last(t).Version)
	})

	t.Run("a new chart version or new values upgrade, with the manifest diff", func(t *testing.T) {
		args := base("0.59.0", nil)
		args["_ansible_diff"] = true
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		diff := res["diff"].(map[string]any)
		assert.Contains(t, diff["before_header"], "flux-operator-0.58.0")
		assert.Contains(t, diff["after_header"], "flux-operator-0.59.0")
		res, code = op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, 3, m.last(t).Version)
		assert.Equal(t, "debug", m.last(t).Config["logLevel"])
	})

	t.Run("a failed upgrade is rolled back (atomic)", func(t *testing.T) {
		m.kube.failNext = true
		res, code := op(base("0.59.0", map[string]any{"logLevel": "info"}))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "upgrade flux-operator to 0.59.0")
		assert.Contains(t, res["msg"], "rolled back")
		assert.Equal(t, "debug", m.last(t).Config["logLevel"], "the last good values are back")
		assert.Equal(t, release.StatusDeployed, m.last(t).Info.Status)
	})

	leavePending := func(t *testing.T, status release.Status, started time.Time) int {
		rel := m.last(t)
		rel.Info.Status, rel.Info.LastDeployed = status, helmtime.Time{Time: started}
		require.NoError(t, m.cfg.Releases.Update(rel))
		return rel.Version
	}

	t.Run("a pending revision of a run that may still go on is left alone", func(t *testing.T) {
		v := leavePending(t, release.StatusPendingUpgrade, time.Now())
		for _, check := range []bool{false, true} {
			args := base("0.59.0", map[string]any{"logLevel": "debug"})
			args["_ansible_check_mode"] = check
			res, code := op(args)
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], "another operation (install/upgrade/rollback) is in progress")
		}
		assert.Equal(t, v, m.last(t).Version)
		assert.Equal(t, release.StatusPendingUpgrade, m.last(t).Info.Status)
	})

	t.Run("an interrupted upgrade is rolled back to the last deployed revision", func(t *testing.T) {
		pending := leavePending(t, release.StatusPendingUpgrade, time.Now().Add(-time.Hour))
		// The revision before it has the chart and values asked for: the
		// plan is the rollback alone, no upgrade after it.
		args := base("0.59.0", map[string]any{"logLevel": "debug"})
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, res["warnings"].([]any)[0], "a real run will recover it")
		assert.Equal(t, true, res["changed"], "the recovery is a change")
		// Revision 3 (0.59.0, debug) is the last one deployed: 4 failed, 5 is the pending one.
		assert.Equal(t, float64(3), res["release"].(map[string]any)["revision"], "the revision it rolls back to")
		assert.Contains(t, res["diff"].(map[string]any)["after_header"], "flux-operator-0.59.0")
		assert.Equal(t, pending, m.last(t).Version, "check mode changed nothing")
		assert.Equal(t, release.StatusPendingUpgrade, m.last(t).Info.Status)

		res, code = op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, res["recovered"], "rolled back from pending-upgrade")
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, release.StatusDeployed, m.last(t).Info.Status)
		assert.Equal(t, pending+1, m.last(t).Version, "the rollback's revision, no upgrade after it")
		assert.Equal(t, float64(pending+1), res["release"].(map[string]any)["revision"])

		res, code = op(base("0.59.0", map[string]any{"logLevel": "debug"}))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"], "then a no-op")
	})

	t.Run("a release Flux adopted is left alone unless forced", func(t *testing.T) {
		dep := operatorDeployment(t, map[string]string{"helm.toolkit.fluxcd.io/name": "flux-operator"})
		m.cluster.Put(dep)
		res, code := op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["adopted"])
		assert.Equal(t, false, res["changed"])
		assert.Contains(t, res["warnings"].([]any)[0], "is adopted by Flux (helm.toolkit.fluxcd.io/name=flux-operator): left alone")
		dep.SetLabels(nil)
		m.cluster.Put(dep)
	})

	t.Run("state absent: check mode keeps it, then it is uninstalled", func(t *testing.T) {
		args := map[string]any{"state": "absent", "_ansible_check_mode": true, "_ansible_diff": true}
		res, code := op(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, release.StatusDeployed, m.last(t).Info.Status)
		m.cluster.Put(operatorDeployment(t, nil))
		go func() {
			time.Sleep(300 * time.Millisecond)
			_ = m.cluster.Clients().Dynamic.Resource(deploymentGVR).Namespace("flux-system").Delete(t.Context(), "flux-operator", metav1.DeleteOptions{})
		}()
		res, code = op(map[string]any{"state": "absent"})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		res, _ = op(map[string]any{"state": "absent"})
		assert.Equal(t, false, res["changed"])
	})

	t.Run("an install left pending-install long ago is uninstalled and installed afresh", func(t *testing.T) {
		res, code := op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		leavePending(t, release.StatusPendingInstall, time.Now().Add(-time.Hour))
		res, code = op(base("0.58.0", nil))
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, res["recovered"], "left pending-install, to install it afresh")
		assert.Equal(t, release.StatusDeployed, m.last(t).Info.Status)
	})

	t.Run("a chart that is not the version asked for fails", func(t *testing.T) {
		res, code := op(map[string]any{"chart_ref": charts["0.58.0"], "chart_version": "0.59.0"})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "is version 0.58.0, not the chart_version 0.59.0 asked for")
	})
}

// operatorDeployment is the chart's Deployment as it stands in the cluster.
func operatorDeployment(t *testing.T, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "flux-operator", "namespace": "flux-system"}, "spec": map[string]any{}}}
	u.SetLabels(labels)
	return u
}

func TestFastWait(t *testing.T) {
	c := kubetest.New()
	w := &fastWaitClient{Client: &helmkube.Client{Log: func(string, ...any) {}}, typed: c.Clients().Typed}
	info := func(kind string, obj runtime.Object) *resource.Info {
		return &resource.Info{Name: "flux-operator", Namespace: "flux-system", Object: obj,
			Mapping: &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}}}
	}
	configMap := &resource.Info{Name: "settings", Namespace: "flux-system", Object: &corev1.ConfigMap{},
		Mapping: &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}}
	assert.NoError(t, w.Wait(helmkube.ResourceList{configMap}, time.Second), "nothing to wait for in a ConfigMap")

	start := time.Now()
	err := w.WaitWithJobs(helmkube.ResourceList{configMap, info("Deployment", &appsv1.Deployment{})}, time.Second)
	assert.EqualError(t, err, "timed out after 1s waiting for Deployment flux-system/flux-operator to be ready")
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestNewHelm(t *testing.T) {
	h, err := newHelm(args{ReleaseNamespace: "flux-system", RegistryUsername: "puller", RegistryPassword: "registry-password-77"}, t.TempDir(), true)
	require.NoError(t, err)
	defer h.cleanup()
	assert.Nil(t, h.kube, "no cluster: no kube clients")
	rel, err := h.lastRelease("flux-operator")
	assert.NoError(t, err)
	assert.Nil(t, rel, "an empty release store")
	version, err := h.kubeVersion()
	require.NoError(t, err)
	assert.Equal(t, clientGoKubeVersion(), version)
	goMod, err := os.ReadFile(filepath.Join(golden.RepoRoot(t), "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(goMod), "\tk8s.io/client-go "+clientGoVersion+"\n", "clientGoVersion follows go.mod")
	assert.Equal(t, "v1."+strings.TrimPrefix(clientGoVersion, "v0."), version)

	_, err = newHelm(args{Connection: kube.Connection{Kubeconfig: filepath.Join(t.TempDir(), "missing")}, ReleaseNamespace: "flux-system", PlainHTTP: true}, t.TempDir(), false)
	assert.ErrorContains(t, err, "kubeconfig")
}
