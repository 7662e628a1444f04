//go:build integration

// Package integration runs the cluster modules together against the test
// bed, in the order the flux_bootstrap role does: flux_operator,
// seed_secret, flux_instance, flux_status_info.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

func TestHandOff(t *testing.T) {
	// Mostly waiting on Flux's controllers: beside TestWaitsSurviveAnAPIServerRestart.
	t.Parallel()
	// Built first: make build can take minutes on a cold cache, and no wait below may count them.
	m := modules(t)
	b := bed.Start(t, bed.Options{Name: "k3sfh", Subnet: "10.213.6", Flux: true})
	ctx := t.Context()
	require.NoError(t, b.AddNode(ctx, "worker"))
	kc, _, err := b.Clients()
	require.NoError(t, err)
	deployKey, err := os.ReadFile(b.Flux.Git.DeployKey)
	require.NoError(t, err)
	var outputs []string
	call := func(module string, args map[string]any) (map[string]any, int) {
		t.Helper()
		args["kubeconfig"] = b.Kubeconfig
		res, code, raw := m.run(module, args)
		outputs = append(outputs, raw)
		return res, code
	}
	instance := func(path string) map[string]any {
		return map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "FluxInstance", "metadata": map[string]any{"name": "flux"},
			"spec": map[string]any{
				"distribution": map[string]any{"version": "2.9.x", "registry": "ghcr.io/fluxcd"},
				"components":   []any{"source-controller", "kustomize-controller"},
				"cluster":      map[string]any{"networkPolicy": false},
				"sync": map[string]any{"kind": "GitRepository", "url": b.Flux.Git.SSHURL, "ref": "refs/heads/main",
					"path": path, "pullSecret": "git-deploy-key"},
			}}
	}

	t.Run("flux_instance fails clearly before the operator exists", func(t *testing.T) {
		res, code := call("flux_instance", map[string]any{"definition": instance("clusters/test"), "wait_timeout": 3})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "waited 3s for the Flux Operator: the FluxInstance CRD (fluxinstances.fluxcd.controlplane.io) is not established")
	})

	t.Run("flux_operator installs the operator", func(t *testing.T) {
		res, code := call("flux_operator", map[string]any{"chart_ref": b.Registry.ChartRef(), "chart_version": "0.59.0", "plain_http": true})
		require.Equal(t, 0, code, res["msg"])
	})

	t.Run("flux_instance fails before applying when a Secret is missing", func(t *testing.T) {
		res, code := call("flux_instance", map[string]any{"definition": instance("clusters/test"),
			"require_secrets": []any{"flux-system/git-deploy-key", "flux-system/sops-age"}})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "required Secrets missing, so the FluxInstance was not applied: flux-system/git-deploy-key, flux-system/sops-age")
		_, err := kc.CoreV1().Secrets("flux-system").Get(ctx, "git-deploy-key", metav1.GetOptions{})
		assert.Error(t, err)
	})

	t.Run("seed_secret seeds the deploy key", func(t *testing.T) {
		res, code := call("seed_secret", map[string]any{"secrets": []any{map[string]any{"name": "git-deploy-key", "namespace": "flux-system",
			"git_deploy_key": map[string]any{"private_key": string(deployKey), "known_hosts": b.Flux.Git.KnownHosts}}}, "config_maps": []any{bed.ClusterVars()}})
		require.Equal(t, 0, code, res["msg"])
	})

	t.Run("flux_instance applies and waits for Ready", func(t *testing.T) {
		start := time.Now()
		res, code := call("flux_instance", map[string]any{"definition": instance("clusters/test"), "require_secrets": []any{"flux-system/git-deploy-key"},
			"_ansible_verbosity": 1})
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, fmt.Sprint(res["progress"]), "FluxInstance flux-system/flux is Ready", "progress shows under -v")
		t.Logf("flux_instance apply and wait: %s", time.Since(start).Round(100*time.Millisecond))
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, true, res["ready"])
		assert.Regexp(t, `^v2\.9\.\d+@sha256:`, res["last_applied_revision"])
		assert.NotEmpty(t, res["components"])
	})

	t.Run("flux_instance re-run is a no-op", func(t *testing.T) {
		before, err := kc.CoreV1().RESTClient().Get().AbsPath("/apis/fluxcd.controlplane.io/v1/namespaces/flux-system/fluxinstances/flux").DoRaw(ctx)
		require.NoError(t, err)
		start := time.Now()
		res, code := call("flux_instance", map[string]any{"definition": instance("clusters/test"), "require_secrets": []any{"flux-system/git-deploy-key"}})
		require.Equal(t, 0, code, res["msg"])
		t.Logf("flux_instance no-op run: %s", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, false, res["changed"])
		after, err := kc.CoreV1().RESTClient().Get().AbsPath("/apis/fluxcd.controlplane.io/v1/namespaces/flux-system/fluxinstances/flux").DoRaw(ctx)
		require.NoError(t, err)
		assert.Equal(t, resourceVersion(before), resourceVersion(after), "no write")
	})

	t.Run("flux_instance refuses a field the CRD does not know, naming it", func(t *testing.T) {
		def := instance("clusters/test")
		def["spec"].(map[string]any)["sync"].(map[string]any)["pth"] = "clusters/typo"
		res, code := call("flux_instance", map[string]any{"definition": def, "require_secrets": []any{"flux-system/git-deploy-key"}})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "spec.sync.pth")
		assert.Equal(t, false, res["changed"])
	})

	var revision string
	t.Run("flux_status_info reports the hand-off and waits for a revision", func(t *testing.T) {
		sha, err := b.Flux.Git.Commit("bump settings", map[string]string{"infra/configs/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: infra\ndata:\n  greeting: hi\n"})
		require.NoError(t, err)
		require.NoError(t, b.RequestReconcile(ctx, bed.GitRepositoryGVR, "flux-system", "flux-system"))
		start := time.Now()
		res, code := call("flux_status_info", map[string]any{"wait": true, "wait_for_revision": sha[:12]})
		require.Equal(t, 0, code, res["msg"])
		t.Logf("flux_status_info wait for the pushed revision: %s", time.Since(start).Round(100*time.Millisecond))
		assert.Equal(t, true, res["ready"])
		assert.Empty(t, res["failing"])
		src := res["sources"].([]any)[0].(map[string]any)
		revision = src["revision"].(string)
		assert.True(t, strings.HasSuffix(revision, sha))
		var names []string
		for _, k := range res["kustomizations"].([]any) {
			names = append(names, k.(map[string]any)["name"].(string))
		}
		assert.ElementsMatch(t, []string{"flux-system", "infra-controllers", "infra-configs", "apps"}, names)
		hello, err := kc.AppsV1().Deployments("apps").Get(ctx, "hello", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, bed.ClusterName, hello.Labels["cluster"], "kustomize-controller substituted ${cluster_name} from the seeded cluster-vars")
	})

	// Seed 000's worst afternoon, against the real controllers: an icon mounted through a
	// configMapGenerator is left out of the artifact by source-controller's default *.png rule.
	t.Run("flux_repo_check predicts what source-controller and kustomize-controller do", func(t *testing.T) {
		instanceFile := filepath.Join(t.TempDir(), "cluster.yaml")
		raw, err := yaml.Marshal(instance("clusters/test"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(instanceFile, raw, 0o600))
		checkWith := func(configMaps []any) (map[string]any, int) {
			// Read-only and on the controller: no kubeconfig.
			res, code, raw := m.run("flux_repo_check", map[string]any{"path": b.Flux.Git.WorkTree(), "instance": instanceFile,
				"secrets": []any{"flux-system/git-deploy-key"}, "config_maps": configMaps, "known_hosts": b.Flux.Git.KnownHosts})
			outputs = append(outputs, raw)
			return res, code
		}
		check := func() (map[string]any, int) { return checkWith([]any{"flux-system/cluster-vars"}) }
		res, code := checkWith([]any{})
		require.Equal(t, 1, code, res)
		assert.Contains(t, res["msg"], "flux-system/apps: spec.postBuild.substituteFrom ConfigMap flux-system/cluster-vars will not exist")
		_, err = b.Flux.Git.Commit("mount the icon", map[string]string{
			"apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - hello.yaml\n" +
				"configMapGenerator:\n  - name: branding\n    namespace: apps\n    files:\n      - branding/icon.png\n",
			"apps/branding/icon.png": "\x89PNG\r\n\x1a\n",
		})
		require.NoError(t, err)
		res, code = check()
		require.Equal(t, 1, code, res)
		assert.Contains(t, res["msg"], "flux-system/apps needs apps/branding/icon.png, which source-controller leaves out of the artifact")
		assert.Contains(t, res["msg"], "`!/apps/branding/icon.png`")

		require.NoError(t, b.RequestReconcile(ctx, bed.GitRepositoryGVR, "flux-system", "flux-system"))
		var failing string
		require.Eventually(t, func() bool {
			res, code := call("flux_status_info", map[string]any{})
			failing = fmt.Sprint(res["failing"])
			return code == 0 && strings.Contains(failing, "icon.png")
		}, 2*time.Minute, time.Second, "kustomize-controller fails on the icon too")
		t.Logf("kustomize-controller: %s", failing)
		assert.Contains(t, failing, "flux-system/apps")

		sha, err := b.Flux.Git.Commit("keep the icon", map[string]string{".sourceignore": "# the icon the branding ConfigMap mounts\n!/apps/branding/icon.png\n"})
		require.NoError(t, err)
		res, code = check()
		require.Equal(t, 0, code, res["msg"])
		assert.Len(t, res["kustomizations"], 4, "the sync and the three Kustomizations of clusters/test")

		require.NoError(t, b.RequestReconcile(ctx, bed.GitRepositoryGVR, "flux-system", "flux-system"))
		res, code = call("flux_status_info", map[string]any{"wait": true, "wait_for_revision": sha[:12]})
		require.Equal(t, 0, code, res["msg"])
		assert.Empty(t, res["failing"], "the clean case reconciles")

		// Back to the fixture's apps/ for the next subtest.
		_, err = b.Flux.Git.Commit("unmount the icon", map[string]string{"apps/kustomization.yaml": "", "apps/branding/icon.png": "", ".sourceignore": ""})
		require.NoError(t, err)
	})

	t.Run("flux_status_info names what fails, and a wait says why", func(t *testing.T) {
		_, err := b.Flux.Git.Commit("break apps", map[string]string{"apps/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  namespace: does-not-exist\n"})
		require.NoError(t, err)
		require.NoError(t, b.RequestReconcile(ctx, bed.GitRepositoryGVR, "flux-system", "flux-system"))
		require.Eventually(t, func() bool {
			res, code := call("flux_status_info", map[string]any{})
			return code == 0 && len(res["failing"].([]any)) > 0
		}, time.Minute, time.Second)
		res, code := call("flux_status_info", map[string]any{"wait": true, "wait_timeout": 3})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "Flux not ready after 3s:")
		assert.Contains(t, res["msg"], "Kustomization/flux-system/apps")
		assert.Contains(t, fmt.Sprint(res["events"]), "Kustomization/flux-system/apps")
	})

	t.Run("flux_instance not Ready fails with conditions and events", func(t *testing.T) {
		res, code := call("flux_instance", map[string]any{"definition": instance("does/not/exist"), "require_secrets": []any{"flux-system/git-deploy-key"}, "wait_timeout": 20})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "FluxInstance flux-system/flux not Ready after 20s")
		assert.NotEmpty(t, res["conditions"])
	})

	t.Run("no secret in any output", func(t *testing.T) {
		all := strings.Join(outputs, "\n")
		for _, line := range strings.Split(strings.TrimSpace(string(deployKey)), "\n") {
			if len(line) > 20 {
				assert.NotContains(t, all, line)
			}
		}
	})
}

func resourceVersion(raw []byte) string {
	i := strings.Index(string(raw), `"resourceVersion":"`)
	if i < 0 {
		return ""
	}
	rest := string(raw[i+len(`"resourceVersion":"`):])
	return rest[:strings.IndexByte(rest, '"')]
}
