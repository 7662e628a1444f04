//go:build integration

package bed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestBed checks the test bed itself: the things every later test relies on.
func TestBed(t *testing.T) {
	start := time.Now()
	b := bed.Start(t, bed.Options{Name: "k3sfi", Subnet: "10.213.2", Flux: true})
	t.Logf("test bed up in %s", time.Since(start).Round(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kc, _, err := b.Clients()
	require.NoError(t, err)
	defer func() {
		if t.Failed() {
			t.Logf("logs: %s %v", b.Dir, b.Flux.Logs())
		}
	}()

	t.Run("a node becomes Ready", func(t *testing.T) {
		require.NoError(t, b.AddNode(ctx, "kwok-node-1"))
	})

	t.Run("a Deployment rolls out", func(t *testing.T) {
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}
		_, err := kc.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			d, err := kc.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 2
		}, time.Minute, 200*time.Millisecond)
	})

	t.Run("the chart pulls from the registry with the Helm SDK and installs", func(t *testing.T) {
		client, err := registry.NewClient(registry.ClientOptPlainHTTP())
		require.NoError(t, err)
		tags, err := client.Tags(b.Registry.Addr + "/" + bed.ChartRepository)
		require.NoError(t, err)
		assert.ElementsMatch(t, bed.ChartVersions, tags)

		settings := cli.New()
		flags := genericclioptions.NewConfigFlags(false)
		flags.KubeConfig = &b.Kubeconfig
		ns := "flux-system"
		flags.Namespace = &ns
		cfg := new(action.Configuration)
		require.NoError(t, cfg.Init(flags, ns, "secret", t.Logf))
		cfg.RegistryClient = client
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.CreateNamespace = "flux-operator", ns, true
		install.Version = bed.ChartVersions[0]
		install.Wait, install.Timeout = true, time.Minute
		install.PlainHTTP = true
		path, err := install.ChartPathOptions.LocateChart(b.Registry.ChartRef(), settings)
		require.NoError(t, err)
		ch, err := loader.Load(path)
		require.NoError(t, err)
		rel, err := install.RunWithContext(ctx, ch, map[string]any{})
		require.NoError(t, err)
		assert.Equal(t, "deployed", rel.Info.Status.String())
		assert.Equal(t, bed.ChartVersions[0], rel.Chart.Metadata.Version)
	})

	revision := ""
	t.Run("a FluxInstance reaches Ready through the real operator", func(t *testing.T) {
		identity, err := os.ReadFile(b.Flux.Git.DeployKey)
		require.NoError(t, err)
		_, err = kc.CoreV1().Secrets("flux-system").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-deploy-key", Namespace: "flux-system"},
			StringData: map[string]string{"identity": string(identity), "known_hosts": b.Flux.Git.KnownHosts},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps("flux-system").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars", Namespace: "flux-system"},
			Data:       map[string]string{"cluster_name": bed.ClusterName},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		start := time.Now()
		_, err = b.Apply(ctx, bed.FluxInstanceGVR, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: "2.9.x"
    registry: ghcr.io/fluxcd
  components:
    - source-controller
    - kustomize-controller
  cluster:
    networkPolicy: false
  sync:
    kind: GitRepository
    url: %s
    ref: refs/heads/main
    path: clusters/test
    pullSecret: git-deploy-key
`, b.Flux.Git.SSHURL))
		require.NoError(t, err)
		require.NoError(t, b.WaitReady(ctx, bed.FluxInstanceGVR, "flux-system", "flux"))
		t.Logf("FluxInstance Ready %s after it was applied", time.Since(start).Round(100*time.Millisecond))
		for _, ks := range []string{"flux-system", "infra-controllers", "infra-configs", "apps"} {
			require.NoError(t, b.WaitReady(ctx, bed.KustomizationGVR, "flux-system", ks), ks)
		}
		_, dc, err := b.Clients()
		require.NoError(t, err)
		repo, err := dc.Resource(bed.GitRepositoryGVR).Namespace("flux-system").Get(ctx, "flux-system", metav1.GetOptions{})
		require.NoError(t, err)
		revision, _, _ = unstructured.NestedString(repo.Object, "status", "artifact", "revision")
		assert.Regexp(t, `^refs/heads/main@sha1:[0-9a-f]{40}$`, revision)
		_, err = kc.AppsV1().Deployments("apps").Get(ctx, "hello", metav1.GetOptions{})
		assert.NoError(t, err, "the apps layer was applied")
	})

	t.Run("a push is picked up at the new revision", func(t *testing.T) {
		newRev, err := b.Flux.Git.Commit("add a config map", map[string]string{
			"infra/configs/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: infra\ndata:\n  added: \"yes\"\n",
		})
		require.NoError(t, err)
		require.False(t, strings.HasSuffix(revision, newRev))
		require.NoError(t, b.RequestReconcile(ctx, bed.GitRepositoryGVR, "flux-system", "flux-system"))
		_, dc, err := b.Clients()
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			repo, err := dc.Resource(bed.GitRepositoryGVR).Namespace("flux-system").Get(ctx, "flux-system", metav1.GetOptions{})
			got, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "revision")
			return err == nil && strings.HasSuffix(got, "@sha1:"+newRev)
		}, time.Minute, 250*time.Millisecond)
		require.NoError(t, b.RequestReconcile(ctx, bed.KustomizationGVR, "flux-system", "infra-configs"))
		require.Eventually(t, func() bool {
			_, err := kc.CoreV1().ConfigMaps("infra").Get(ctx, "extra", metav1.GetOptions{})
			return err == nil
		}, time.Minute, 250*time.Millisecond)
	})

	// kustomize-controller removes the kustomization-* directories in its temporary directory when
	// it starts (its main.go, purgeStaleTempDirs): in a bed, only its own.
	t.Run("a kustomize-controller starting removes what it left in its own temporary directory, no other bed's", func(t *testing.T) {
		others, err := os.MkdirTemp("", "kustomization-")
		require.NoError(t, err, "as another bed's build holds it")
		t.Cleanup(func() { _ = os.RemoveAll(others) })
		left := filepath.Join(b.Flux.TempDir("kustomize-controller"), "kustomization-left")
		require.NoError(t, os.Mkdir(left, 0o700))
		require.NoError(t, b.Flux.Restart("kustomize-controller"))
		require.Eventually(t, func() bool {
			_, err := os.Stat(left)
			return os.IsNotExist(err)
		}, time.Minute, 100*time.Millisecond, "the new process purged its own")
		assert.DirExists(t, others)
	})
}
