package nodedrain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

var nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

func pod(name, node, ownerKind string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ownerKind != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: name + "-owner", UID: "owner", Controller: &yes}}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestSortPods(t *testing.T) {
	deleting := metav1.Now()
	pods := []corev1.Pod{
		*pod("web", "n", "ReplicaSet"),
		*pod("agent", "n", "DaemonSet"),
		*pod("static", "n", "", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorAnnotation: "x"} }),
		*pod("bare", "n", ""),
		*pod("cache", "n", "ReplicaSet", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}),
		*pod("job-done", "n", "", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		*pod("going", "n", "", func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }),
	}
	s := sortPods(pods, deleteOptions{})
	assert.Equal(t, []string{"apps/going", "apps/job-done", "apps/web"}, podIDs(s.Evict))
	assert.Equal(t, []string{"apps/static (mirror Pod)"}, s.Left)
	assert.Equal(t, []string{
		"apps/agent (DaemonSet Pod: set delete_options.ignore_daemonsets)",
		"apps/bare (no controller owns it: set delete_options.force)",
		"apps/cache (emptyDir volume: set delete_options.delete_emptydir_data)",
	}, s.Refused)

	s = sortPods(pods, deleteOptions{IgnoreDaemonsets: true, Force: true, DeleteEmptydirData: true})
	assert.Equal(t, []string{"apps/bare", "apps/cache", "apps/going", "apps/job-done", "apps/web"}, podIDs(s.Evict))
	assert.Equal(t, []string{"apps/agent (DaemonSet)", "apps/static (mirror Pod)"}, s.Left)
	assert.Empty(t, s.Refused)
}

func TestDrainAgainstAnInMemoryCluster(t *testing.T) {
	c := kubetest.New(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node3"}},
		pod("web-1", "node2", "ReplicaSet"), pod("web-2", "node3", "ReplicaSet"), pod("agent-x", "node2", "DaemonSet"),
	)
	apply := func(args map[string]any) (map[string]any, int) {
		t.Helper()
		res, code, _ := ansibletest.Run(t, module, kube.With(run, c.Connector()), args)
		return res, code
	}
	unschedulable := func(name string) bool {
		v, _ := c.Object(nodesGVR, "", name).Object["spec"].(map[string]any)["unschedulable"].(bool)
		return v
	}
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}

	t.Run("a DaemonSet Pod refuses the drain and nothing is done", func(t *testing.T) {
		res, code := apply(map[string]any{"name": "node2"})
		assert.Equal(t, 1, code)
		assert.Equal(t, "cannot drain node node2, nothing done: apps/agent-x (DaemonSet Pod: set delete_options.ignore_daemonsets)", res["msg"])
		assert.False(t, unschedulable("node2"))
		assert.Equal(t, 0, c.Writes())
	})

	opts := map[string]any{"ignore_daemonsets": true, "wait_timeout": 5, "wait_sleep": 1}
	t.Run("check mode: what would go, nothing written", func(t *testing.T) {
		res, code := apply(map[string]any{"name": "node2", "delete_options": opts, "_ansible_check_mode": true, "_ansible_diff": true})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, []any{"apps/web-1"}, res["evicted"])
		assert.Equal(t, []any{"apps/agent-x (DaemonSet)"}, res["left"])
		diff := res["diff"].(map[string]any)
		assert.Equal(t, "node node2: schedulable\npods to evict: \n  - apps/web-1\n", diff["before"])
		assert.Equal(t, "node node2: cordoned (unschedulable)\npods to evict: none\n", diff["after"])
		assert.Equal(t, 0, c.Writes())
	})

	t.Run("a PodDisruptionBudget holds an eviction back, then lets it go", func(t *testing.T) {
		held := 0
		c.Fail = func(verb string, gvr schema.GroupVersionResource, name string) error {
			if verb == "evict" && held < 2 {
				held++
				return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
			}
			return nil
		}
		defer func() { c.Fail = nil }()
		start := time.Now()
		res, code := apply(map[string]any{"name": "node2", "delete_options": opts})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, 2, held)
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "retried every wait_sleep")
		assert.Equal(t, true, res["changed"])
		assert.True(t, unschedulable("node2"))
		assert.Nil(t, c.Object(podsGVR, "apps", "web-1"))
		assert.NotNil(t, c.Object(podsGVR, "apps", "agent-x"), "DaemonSet Pod left")
		assert.NotNil(t, c.Object(podsGVR, "apps", "web-2"), "another node's Pod untouched")
	})

	t.Run("a second drain changes nothing", func(t *testing.T) {
		writes := c.Writes()
		res, code := apply(map[string]any{"name": "node2", "delete_options": opts})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, writes, c.Writes())
	})

	t.Run("held back past the timeout: the Pod and the budget's answer named", func(t *testing.T) {
		c.Fail = func(verb string, gvr schema.GroupVersionResource, name string) error {
			if verb == "evict" {
				return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
			}
			return nil
		}
		defer func() { c.Fail = nil }()
		res, code := apply(map[string]any{"name": "node3", "delete_options": map[string]any{"wait_timeout": 2, "wait_sleep": 1}})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "drain node node3: not done after 2s: 1 pod(s) still held back by a PodDisruptionBudget (apps/web-2); last: pod apps/web-2: Cannot evict pod as it would violate the pod's disruption budget.")
		assert.True(t, unschedulable("node3"), "left cordoned, as kubectl leaves it")
	})

	t.Run("uncordon: check mode, then done, then nothing", func(t *testing.T) {
		res, code := apply(map[string]any{"name": "node3", "state": "uncordon", "_ansible_check_mode": true})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.True(t, unschedulable("node3"))
		res, code = apply(map[string]any{"name": "node3", "state": "uncordon"})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, false, res["unschedulable"])
		assert.False(t, unschedulable("node3"))
		res, _ = apply(map[string]any{"name": "node3", "state": "uncordon"})
		assert.Equal(t, false, res["changed"])
	})

	t.Run("cordon only leaves the Pods", func(t *testing.T) {
		res, code := apply(map[string]any{"name": "node3", "state": "cordon"})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, []any{}, res["evicted"])
		assert.NotNil(t, c.Object(podsGVR, "apps", "web-2"))
	})

	t.Run("absent: check mode, then drained and deleted, then nothing", func(t *testing.T) {
		res, code := apply(map[string]any{"name": "node3", "state": "absent", "delete_options": opts, "_ansible_check_mode": true, "_ansible_diff": true})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, "node node3: absent\n", res["diff"].(map[string]any)["after"])
		assert.NotNil(t, c.Object(nodesGVR, "", "node3"))
		res, code = apply(map[string]any{"name": "node3", "state": "absent", "delete_options": opts})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, []any{"apps/web-2"}, res["evicted"])
		assert.Nil(t, c.Object(nodesGVR, "", "node3"))
		assert.Nil(t, c.Object(podsGVR, "apps", "web-2"))
		res, code = apply(map[string]any{"name": "node3", "state": "absent"})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
	})

	t.Run("an unknown Node is named", func(t *testing.T) {
		res, code := apply(map[string]any{"name": "node9", "state": "uncordon"})
		assert.Equal(t, 1, code)
		assert.Equal(t, "no Node named node9", res["msg"])
	})
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

// TestDecide: the plan for each state, from the Node and Pods as read,
// before anything changes.
func TestDecide(t *testing.T) {
	cordoned := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}}
	schedulable := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	web, agent := *pod("web", "n", "ReplicaSet"), *pod("agent", "n", "DaemonSet")
	for _, tc := range []struct {
		name        string
		state       string
		node        *corev1.Node
		pods        []corev1.Pod
		options     deleteOptions
		cordon      bool
		evict       []string
		deleteNode  bool
		changed     bool
		errContains string
	}{
		{name: "cordon a schedulable Node", state: "cordon", node: schedulable, cordon: true, changed: true},
		{name: "cordon a cordoned Node: nothing", state: "cordon", node: cordoned},
		{name: "uncordon a cordoned Node", state: "uncordon", node: cordoned, cordon: true, changed: true},
		{name: "uncordon a schedulable Node: nothing", state: "uncordon", node: schedulable},
		{name: "drain: cordon and evict", state: "drain", node: schedulable, pods: []corev1.Pod{web}, cordon: true, evict: []string{"apps/web"}, changed: true},
		{name: "drain a cordoned Node with nothing to evict: nothing", state: "drain", node: cordoned},
		{name: "drain a cordoned Node, a Pod still on it", state: "drain", node: cordoned, pods: []corev1.Pod{web}, evict: []string{"apps/web"}, changed: true},
		{name: "a DaemonSet Pod refuses the drain", state: "drain", node: schedulable, pods: []corev1.Pod{web, agent}, errContains: "cannot drain node n, nothing done: apps/agent (DaemonSet Pod"},
		{name: "ignore_daemonsets leaves it", state: "drain", node: schedulable, pods: []corev1.Pod{web, agent}, options: deleteOptions{IgnoreDaemonsets: true}, cordon: true, evict: []string{"apps/web"}, changed: true},
		{name: "absent: drain then delete", state: "absent", node: cordoned, pods: []corev1.Pod{web}, evict: []string{"apps/web"}, deleteNode: true, changed: true},
		{name: "absent, no Node: nothing", state: "absent"},
		{name: "no Node to cordon", state: "cordon", errContains: "no Node named n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := args{Name: "n", State: tc.state, DeleteOptions: tc.options}
			p, err := decide(a, tc.node, tc.pods)
			if tc.errContains != "" {
				assert.ErrorContains(t, err, tc.errContains)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.cordon, p.setUnschedulable, "set spec.unschedulable")
			if tc.evict == nil {
				tc.evict = []string{}
			}
			assert.Equal(t, tc.evict, podIDs(p.pods.Evict), "evict")
			assert.Equal(t, tc.deleteNode, p.delete, "delete")
			res := p.result(a)
			assert.Equal(t, tc.changed, res.Changed, "changed")
			assert.Equal(t, tc.changed, len(res.Diff) == 1, "a diff when changed")
		})
	}
}
