package fluxinstance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

const clusterYAML = `apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
spec:
  distribution:
    version: "2.9.x"
    registry: ghcr.io/fluxcd
`

func TestLoadInstance(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	obj, err := loadInstance(args{Src: write("cluster.yaml", clusterYAML)})
	require.NoError(t, err)
	assert.Equal(t, "flux-system", obj.GetNamespace(), "namespace defaults to flux-system")

	for name, tc := range map[string]struct {
		a    args
		want string
	}{
		"wrong kind":      {args{Definition: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "flux"}}}, `holds apiVersion "v1" kind "ConfigMap": want apiVersion fluxcd.controlplane.io/v1, kind FluxInstance`},
		"wrong name":      {args{Definition: map[string]any{"apiVersion": apiVersion, "kind": instanceKind, "metadata": map[string]any{"name": "main"}}}, `metadata.name is "main", but the Flux Operator accepts only "flux"`},
		"no distribution": {args{Definition: map[string]any{"apiVersion": apiVersion, "kind": instanceKind, "metadata": map[string]any{"name": "flux"}, "spec": map[string]any{}}}, "spec.distribution is required"},
		"not yaml":        {args{Src: write("bad.yaml", "a: [")}, "is not YAML"},
		"missing file":    {args{Src: filepath.Join(dir, "nope.yaml")}, "read src"},
	} {
		_, err := loadInstance(tc.a)
		assert.ErrorContains(t, err, tc.want, name)
	}
}

func TestSameObject(t *testing.T) {
	a := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"x": "1"}, "metadata": map[string]any{"name": "flux", "resourceVersion": "1"}}}
	b := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"x": "1"}, "metadata": map[string]any{"name": "flux", "resourceVersion": "2"}}}
	assert.True(t, sameObject(a, b), "server bookkeeping does not count")
	b.Object["spec"] = map[string]any{"x": "2"}
	assert.False(t, sameObject(a, b))
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestCheckModeWithoutACluster(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "cluster.yaml")
	require.NoError(t, os.WriteFile(src, []byte(clusterYAML), 0o600))
	kubeconfig := filepath.Join(dir, "not-fetched-yet", "kubeconfig")
	res, code, _ := ansibletest.Run(t, module, kube.With(run, kube.Connect), map[string]any{"kubeconfig": kubeconfig, "src": src,
		"require_secrets": []any{"flux-system/git-deploy-key"}, "_ansible_check_mode": true, "_ansible_diff": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, false, res["ready"])
	diff := res["diff"].(map[string]any)
	assert.Equal(t, "", diff["before"])
	assert.Contains(t, diff["after"], "kind: FluxInstance")
	assert.Contains(t, diff["after"], "version: 2.9.x")
	assert.Contains(t, res["warnings"].([]any)[0], "kubeconfig "+kubeconfig+" does not exist yet")

	res, code, _ = ansibletest.Run(t, module, kube.With(run, kube.Connect), map[string]any{"kubeconfig": kubeconfig, "src": src})
	assert.Equal(t, 1, code, "a real run still needs the cluster")
	assert.Contains(t, res["msg"], "kubeconfig "+kubeconfig)
}
