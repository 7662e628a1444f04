//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// cilium is the CNI layer of the test repository: a DaemonSet shaped like
// Cilium's agent (label k8s-app=cilium, tolerating every taint), whose Ready
// Pod on a node is what the k3s stand-in takes for the CNI's config written
// there.
const cilium = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cilium
  namespace: kube-system
spec:
  selector:
    matchLabels:
      k8s-app: cilium
  template:
    metadata:
      labels:
        k8s-app: cilium
    spec:
      hostNetwork: true
      tolerations:
        - operator: Exists
      containers:
        - name: cilium-agent
          image: quay.io/cilium/cilium:v1.18.4
`

// TestCNIFromFlux is seed 001's cluster: k3s with flannel-backend none, so
// the nodes stay NotReady (NetworkPluginNotReady) until Flux installs the
// CNI. The play waits only for the nodes to register, schedules the
// operator and the Flux controllers on NotReady nodes, and ends when the
// nodes are Ready.
func TestCNIFromFlux(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfn", Subnet: "10.213.12", Controllers: 1, Workers: 1, Flux: true})
	dir := t.TempDir()
	vars, _, err := b.PlayVars(filepath.Join(dir, "play"))
	require.NoError(t, err)
	vars["k8s_cluster_server_config"] = map[string]any{"flannel-backend": "none", "disable-network-policy": true}
	varsFile := filepath.Join(dir, "vars.json")
	writeJSON(t, varsFile, vars)
	_, err = b.Flux.Git.Commit("the CNI", map[string]string{"infra/controllers/cilium.yaml": cilium})
	require.NoError(t, err)
	kc, _, err := b.Clients()
	require.NoError(t, err)
	ctx := t.Context()
	play := func() playResult {
		t.Helper()
		return c.play(t, "-i", b.Hosts.Inventory, filepath.Join(c.root, "playbooks", "k8s.yml"), "-e", "@"+varsFile)
	}

	t.Run("converge", func(t *testing.T) {
		r := play()
		if r.err != nil {
			logPods(t, kc)
		}
		require.NoError(t, r.err, r.output)
		t.Logf("converge with the CNI from Flux: %s", r.duration.Round(100*time.Millisecond))
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "Wait until every node is registered (Ready once Flux installed the CNI)")
		assert.Contains(t, flat, `"node1 NotReady control-plane,master`, "k8s_cluster ends with the nodes NotReady")
		assert.Contains(t, flat, `"node2 NotReady <none>`)
		assert.Contains(t, section(r.output, "Wait until the nodes that were NotReady are Ready"), "ok: [localhost]")
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, nodes.Items, 2)
		for i := range nodes.Items {
			assert.True(t, bed.NodeReady(&nodes.Items[i]), nodes.Items[i].Name)
			assert.NotContains(t, nodes.Items[i].Annotations, bed.CNIPendingAnnotation)
		}
		op, err := kc.AppsV1().Deployments("flux-system").Get(ctx, "flux-operator", metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, op.Spec.Template.Spec.HostNetwork, "the operator on the host network")
		assert.Equal(t, "node.kubernetes.io/not-ready", op.Spec.Template.Spec.Tolerations[0].Key)
		sc, err := kc.AppsV1().Deployments("flux-system").Get(ctx, "source-controller", metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, sc.Spec.Template.Spec.HostNetwork, "flux_instance's host_network patch")
		assert.Equal(t, int32(9790), sc.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort, "a port of its own")
	})

	t.Run("idempotence", func(t *testing.T) {
		r := play()
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "localhost": 0}, r.changed(), r.output)
		assert.Contains(t, section(r.output, "Wait until the nodes that were NotReady are Ready"), "skipping: [localhost]")
	})
}

// logPods logs every Pod's node, phase and conditions, and the events of
// flux-system: what a failed wait for Flux leaves to go on.
func logPods(t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		var conds []string
		for _, c := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Message))
		}
		t.Logf("pod %s/%s node=%q phase=%s %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, strings.Join(conds, "; "))
	}
	events, err := kc.CoreV1().Events("flux-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list events: %v", err)
		return
	}
	for _, e := range events.Items {
		t.Logf("event %s %s/%s: %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
}
