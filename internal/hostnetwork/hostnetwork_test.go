package hostnetwork

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fluxDeployment is shaped like a Flux controller's Deployment in the
// operator's manifests: args, env, and 8080/9440 (and 9090) container ports.
func fluxDeployment(name string, ports []corev1.ContainerPort) []byte {
	d := appsv1.Deployment{}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager",
		Args:  []string{"--watch-all-namespaces", "--storage-adv-addr=" + name + ".$(RUNTIME_NAMESPACE).svc.cluster.local."},
		Env:   []corev1.EnvVar{{Name: "RUNTIME_NAMESPACE"}},
		Ports: ports}}
	raw, _ := json.Marshal(d)
	return raw
}

func TestHostNetworkPatches(t *testing.T) {
	used := map[int]string{}
	for _, p := range []int{8080, 8081, 9080} {
		used[p] = "flux-operator"
	}
	for i, p := range hostNetworkPatches() {
		patch := p.(map[string]any)
		name := patch["target"].(map[string]any)["name"].(string)
		require.Equal(t, controllerPorts[i].controller, name)
		ops, err := jsonpatch.DecodePatch([]byte(patch["patch"].(string)))
		require.NoError(t, err, name)
		out, err := ops.Apply(fluxDeployment(name, []corev1.ContainerPort{{Name: "http-prom", ContainerPort: 8080}, {Name: "healthz", ContainerPort: 9440}}))
		require.NoError(t, err, name)
		var d appsv1.Deployment
		require.NoError(t, json.Unmarshal(out, &d))
		spec := d.Spec.Template.Spec
		assert.True(t, spec.HostNetwork, name)
		assert.Equal(t, []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, spec.Tolerations, name)
		c := spec.Containers[0]
		require.Len(t, c.Ports, len(controllerPorts[i].ports), name)
		for j, port := range c.Ports {
			want := controllerPorts[i].ports[j]
			assert.Equal(t, want.name, port.Name)
			assert.Contains(t, c.Args, fmt.Sprintf("%s=:%d", want.flag, want.port), "%s listens where its port says", name)
			other, clash := used[int(port.ContainerPort)]
			assert.False(t, clash, "%s port %d is also %s's: on one node the scheduler would refuse one of them", name, port.ContainerPort, other)
			used[int(port.ContainerPort)] = name
		}
		if name == "source-controller" {
			assert.Equal(t, "--storage-adv-addr=$(HOST_NETWORK_POD_IP):9790", c.Args[len(c.Args)-1], "the last flag wins")
			assert.Equal(t, "status.podIP", c.Env[len(c.Env)-1].ValueFrom.FieldRef.FieldPath)
		}
	}
}

func TestHostNetworkKeepsTheInstancesPatches(t *testing.T) {
	def := definition("2.9.5")
	own := map[string]any{"target": map[string]any{"kind": "Kustomization", "name": "flux-system"}, "patch": "- op: add\n  path: /spec/decryption\n  value: {provider: sops}\n"}
	def["spec"].(map[string]any)["kustomize"] = map[string]any{"patches": []any{own}}
	obj := &unstructured.Unstructured{Object: def}
	require.NoError(t, Add(obj))
	patches, _, _ := unstructured.NestedSlice(obj.Object, "spec", "kustomize", "patches")
	require.Len(t, patches, 1+len(controllerPorts))
	assert.Equal(t, own, patches[0])

	plain := &unstructured.Unstructured{Object: definition("2.9.5")}
	require.NoError(t, Add(plain))
	patches, _, _ = unstructured.NestedSlice(plain.Object, "spec", "kustomize", "patches")
	assert.Len(t, patches, len(controllerPorts))
}

// definition is a FluxInstance as a user writes it.
func definition(version string) map[string]any {
	return map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "FluxInstance", "metadata": map[string]any{"name": "flux", "namespace": "flux-system"},
		"spec": map[string]any{"distribution": map[string]any{"version": version, "registry": "ghcr.io/fluxcd"}}}
}
