//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// workload is a Deployment of kwok Pods and its PodDisruptionBudget; with
// a node, its one replica is pinned there and the budget allows no
// disruption, so that node can never be drained.
func workload(t *testing.T, kc kubernetes.Interface, name string, replicas int32, node string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	grace := int64(1) // kwok keeps an evicted Pod for its whole grace period
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}, TerminationGracePeriodSeconds: &grace}
	budget := policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}}
	if node != "" {
		spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
		budget.MinAvailable = &intstr.IntOrString{IntVal: replicas}
	} else {
		budget.MaxUnavailable = &intstr.IntOrString{IntVal: 1}
	}
	_, err := kc.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: budget}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := kc.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		p, perr := kc.PolicyV1().PodDisruptionBudgets("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && perr == nil && d.Status.ReadyReplicas == replicas && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == replicas
	}, time.Minute, 200*time.Millisecond, "deployment %s ready and its budget observed", name)
}

// cordonWatch records, while a play runs, the most Nodes unschedulable at
// once and the order in which Nodes were first seen cordoned.
type cordonWatch struct {
	mu      sync.Mutex
	most    int
	order   []string
	stop    chan struct{}
	stopped chan struct{}
}

func watchCordons(kc kubernetes.Interface) *cordonWatch {
	w := &cordonWatch{stop: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		for {
			if nodes, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err == nil {
				w.mu.Lock()
				n := 0
				for _, node := range nodes.Items {
					if node.Spec.Unschedulable {
						n++
						if !slices.Contains(w.order, node.Name) {
							w.order = append(w.order, node.Name)
						}
					}
				}
				w.most = max(w.most, n)
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *cordonWatch) done() (int, []string) {
	close(w.stop)
	<-w.stopped
	return w.most, w.order
}

// logDisruption logs the Pods, where they run and whether they are going,
// and each PodDisruptionBudget's status: what a held-back drain waited on.
func logDisruption(t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	logPods(t, kc)
	ctx := context.Background()
	if pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s deleting=%v", p.Name, p.DeletionTimestamp)
		}
	}
	if pdbs, err := kc.PolicyV1().PodDisruptionBudgets("default").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pdbs.Items {
			t.Logf("pdb %s: %+v", p.Name, p.Status)
		}
	}
	if nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			t.Logf("node %s unschedulable=%v taints=%v conditions=%+v", n.Name, n.Spec.Unschedulable, n.Spec.Taints, n.Status.Conditions)
		}
	}
	if events, err := kc.CoreV1().Events("default").List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range events.Items {
			t.Logf("event %s %s %s/%s: %s: %s", e.LastTimestamp, e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// nodeVersions is each Node's kubelet version and whether it is cordoned.
func nodeVersions(t *testing.T, kc kubernetes.Interface) map[string]string {
	t.Helper()
	nodes, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range nodes.Items {
		out[n.Name] = n.Status.NodeInfo.KubeletVersion
		if n.Spec.Unschedulable {
			out[n.Name] += " cordoned"
		}
	}
	return out
}

// testUpgrades runs the rolling upgrade subtests on the converged HA bed
// (3 servers, 1 agent): play runs k8s.yml with the variables given.
func testUpgrades(t *testing.T, b *bed.Bed, vars map[string]any, play func(map[string]any, ...string) playResult) {
	kc, _, err := b.Clients()
	require.NoError(t, err)
	with := func(kv ...any) map[string]any {
		v := map[string]any{}
		for k, x := range vars {
			v[k] = x
		}
		for i := 0; i < len(kv); i += 2 {
			v[kv[i].(string)] = kv[i+1]
		}
		return v
	}
	const v1, v2, v3 = "v1.36.2+k3s1", "v1.36.3+k3s1", "v1.36.4+k3s1"
	all := func(version string) map[string]string {
		return map[string]string{"node1": version, "node2": version, "node3": version, "node4": version}
	}
	require.Equal(t, all(v1), nodeVersions(t, kc))
	workload(t, kc, "web", 4, "")

	t.Run("upgrade check", func(t *testing.T) {
		r := play(with("k8s_cluster_k3s_version", v2), "--check", "--diff")
		require.NoError(t, r.err, r.output)
		for _, n := range []string{"node1", "node2", "node3", "node4"} {
			assert.Contains(t, r.output, "(item="+n+" from "+v1+" to "+v2+")", r.output)
		}
		assert.Contains(t, r.output, "+k3s: "+v2)
		assert.Equal(t, all(v1), nodeVersions(t, kc), "nothing upgraded or cordoned")
		assert.Contains(t, r.output, "would take an etcd snapshot named pre-upgrade-v1.36.3-k3s1-<node name>-<unix time>")
		assert.Empty(t, snapshotsOn(t, b.Hosts.Host("node1")), "and no snapshot taken")
	})

	t.Run("upgrade", func(t *testing.T) {
		before, err := kc.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		require.NoError(t, err)
		w := watchCordons(kc)
		r := play(with("k8s_cluster_k3s_version", v2))
		most, order := w.done()
		if r.err != nil {
			logDisruption(t, kc)
		}
		require.NoError(t, r.err, r.output)
		t.Logf("rolling upgrade of 3+1 nodes: %s", r.duration.Round(100*time.Millisecond))
		assert.Equal(t, 1, most, "one node unschedulable at a time")
		assert.Equal(t, []string{"node1", "node2", "node3", "node4"}, order, "servers in order, then the agent")
		assert.Equal(t, all(v2), nodeVersions(t, kc), "all upgraded and uncordoned")
		// A snapshot before the first node was touched, named after the step and the version.
		taken := snapshotNamed(t, b.Hosts.Host("node1"), "pre-upgrade-v1.36.3-k3s1")
		assert.Less(t, strings.Index(r.output, "Snapshot "+taken+" on node1: file:///var/lib/rancher/k3s/server/db/snapshots/"+taken),
			strings.Index(r.output, "TASK [gitops.k3s_flux.k8s_cluster : Drain the node before its upgrade]"), "taken before the first drain")
		for _, h := range b.Hosts.Hosts {
			out, err := h.Exec("/usr/local/bin/k3s --version")
			require.NoError(t, err)
			assert.Contains(t, out, v2, h.Name)
		}
		after, err := kc.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		require.NoError(t, err)
		for _, p := range before.Items {
			assert.False(t, slices.ContainsFunc(after.Items, func(q corev1.Pod) bool { return q.UID == p.UID }), "pod %s was evicted", p.Name)
		}
		r = play(with("k8s_cluster_k3s_version", v2))
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "node4": 0, "localhost": 0}, r.changed(), r.output)
		assert.Len(t, snapshotsOn(t, b.Hosts.Host("node1")), 1, "nothing to upgrade, no snapshot")
	})

	t.Run("upgrade stops", func(t *testing.T) {
		workload(t, kc, "pinned", 1, "node3")
		// Only node3's drain is meant to run out of time: a short wait as node3's own variable
		// (an inventory of its own), while node1's and node2's drains under web's budget wait
		// the role's.
		inventory := filepath.Join(t.TempDir(), "node3-drain.yml")
		writeJSON(t, inventory, map[string]any{"all": map[string]any{"hosts": map[string]any{"node3": map[string]any{
			"k8s_cluster_drain_options": map[string]any{"ignore_daemonsets": true, "wait_timeout": 10, "wait_sleep": 1}}}}})
		r := play(with("k8s_cluster_k3s_version", v3), "-i", inventory)
		require.Error(t, r.err)
		if !strings.Contains(r.output, "failed at 'Drain the node before its upgrade': drain node node3") {
			logDisruption(t, kc)
		}
		r.output = strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, r.output, "The upgrade of node3 (Node node3) from "+v2+" to "+v3+" failed at 'Drain the node before its upgrade': drain node node3: not done after 10s: 1 pod(s) still held back by a PodDisruptionBudget (default/pinned-", r.output)
		assert.Contains(t, r.output, "The rollout stopped there: no other node of this step and every agent stay on their version, and the Node node3 is left cordoned.")
		assert.Regexp(t, `The etcd snapshot taken before the rollout: pre-upgrade-v1\.36\.4-k3s1-node1-\d{10} on node1\.`, r.output)
		assert.Equal(t, map[string]string{"node1": v3, "node2": v3, "node3": v2 + " cordoned", "node4": v2}, nodeVersions(t, kc))

		// Once the budget allows it, a re-run carries on where the rollout stopped.
		require.NoError(t, kc.PolicyV1().PodDisruptionBudgets("default").Delete(context.Background(), "pinned", metav1.DeleteOptions{}))
		r = play(with("k8s_cluster_k3s_version", v3))
		if r.err != nil {
			logDisruption(t, kc)
		}
		require.NoError(t, r.err, r.output)
		assert.Equal(t, all(v3), nodeVersions(t, kc))
		assert.Equal(t, 0, r.changed()["node1"]+r.changed()["node2"], "the upgraded servers untouched: %s", r.output)
		assert.Len(t, snapshotsOn(t, b.Hosts.Host("node1")), 3, "a snapshot before each rollout, the one carried on too: %s", r.output)
	})

	t.Run("no downgrade", func(t *testing.T) {
		r := play(with("k8s_cluster_k3s_version", v2))
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "node4": 0, "localhost": 0}, r.changed(), r.output)
		// Ansible wraps warnings, and shows one text once however many hosts gave it.
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "k3s "+v3+" on this node is newer than version "+v2+": left on it, not downgraded", r.output)
		assert.Equal(t, all(v3), nodeVersions(t, kc))
	})
}
