package clusternodes

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

func k8sNode(name string, ready corev1.ConditionStatus, labels map[string]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.NodeInfo.KubeletVersion = "v1.36.2+k3s1"
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", Message: "ok"}}
	}
	return n
}

func TestCompare(t *testing.T) {
	items := []corev1.Node{
		k8sNode("node2", corev1.ConditionFalse, nil),
		k8sNode("node1", corev1.ConditionTrue, map[string]string{rolePrefix + "master": "true", rolePrefix + "control-plane": "true"}),
		k8sNode("node3", "", nil),
	}
	for _, tc := range []struct {
		name              string
		wanted            []string
		missing, notReady []string
		ready             bool
	}{
		{"nothing asked", nil, []string{}, []string{}, true},
		{"all ready", []string{"node1"}, []string{}, []string{}, true},
		{"not ready and missing", []string{"node1", "node2", "node3", "node4"}, []string{"node4"}, []string{"node2", "node3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := compare(items, tc.wanted, "")
			assert.Equal(t, tc.missing, rep.Missing)
			assert.Equal(t, tc.notReady, rep.NotReady)
			assert.Equal(t, tc.ready, rep.done(false))
			assert.Equal(t, []string{"node1", "node2", "node3"}, names(rep.Nodes), "sorted by name")
		})
	}
	upgraded := compare(items, []string{"node1"}, "v1.37.0+k3s1")
	assert.Equal(t, []string{"node1"}, upgraded.Outdated)
	assert.False(t, upgraded.done(false), "Ready on the old version is not done")
	assert.True(t, compare(items, []string{"node1"}, "v1.36.2+k3s1").done(false))
	rep := compare(items, nil, "")
	assert.Equal(t, node{Name: "node1", Ready: true, Roles: []string{"control-plane", "master"}, Version: "v1.36.2+k3s1",
		InternalIP: "10.0.0.1", Reason: "KubeletReady", Message: "ok"}, rep.Nodes[0])
	assert.Equal(t, "NoReadyCondition", rep.Nodes[2].Reason)
	assert.Equal(t, []string{"node1 Ready control-plane,master v1.36.2+k3s1 10.0.0.1", "node2 NotReady <none> v1.36.2+k3s1 10.0.0.1",
		"node3 NotReady <none> v1.36.2+k3s1 10.0.0.1"}, summary(rep.Nodes))
}

func TestNotReadyError(t *testing.T) {
	rep := compare([]corev1.Node{k8sNode("node2", corev1.ConditionFalse, nil)}, []string{"node1", "node2"}, "")
	err := notReadyError(args{Wait: true, WaitTimeout: 5}, rep)
	assert.EqualError(t, err, "nodes not Ready after 5s: no Node named node1 (nodes: node2); node2 not Ready: KubeletReady: ok")
	err = notReadyError(args{}, compare(nil, []string{"node1"}, ""))
	assert.EqualError(t, err, "nodes not Ready: no Node named node1 (nodes: none)")
	a := args{Wait: true, WaitTimeout: 5, Version: "v1.37.0+k3s1"}
	err = notReadyError(a, compare([]corev1.Node{k8sNode("node2", corev1.ConditionTrue, nil)}, []string{"node2"}, a.Version))
	assert.EqualError(t, err, "nodes not Ready after 5s: node2 runs v1.36.2+k3s1, not v1.37.0+k3s1")
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestRunAgainstAnInMemoryCluster(t *testing.T) {
	node1 := k8sNode("node1", corev1.ConditionTrue, nil)
	node2 := k8sNode("node2", corev1.ConditionFalse, nil)
	c := kubetest.New(&node1, &node2)
	nodes := func(args map[string]any) (map[string]any, int) {
		res, code, _ := ansibletest.Run(t, module, kube.With(run, c.Connector()), args)
		return res, code
	}

	res, code := nodes(map[string]any{"names": []any{"node1"}})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
	assert.Equal(t, []any{"node1 Ready <none> v1.36.2+k3s1 10.0.0.1", "node2 NotReady <none> v1.36.2+k3s1 10.0.0.1"}, res["summary"])

	res, code = nodes(map[string]any{"names": []any{"node1", "node2", "node3"}, "wait": false})
	assert.Equal(t, 1, code)
	assert.Equal(t, "nodes not Ready: no Node named node3 (nodes: node1, node2); node2 not Ready: KubeletReady: ok", res["msg"])
	assert.Equal(t, []any{"node3"}, res["missing"])
	assert.Equal(t, []any{"node2"}, res["not_ready"])

	// A NotReady node counts once registered; a missing one still fails.
	res, code = nodes(map[string]any{"names": []any{"node1", "node2"}, "wait_for": "registered"})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, []any{"node2"}, res["not_ready"])
	res, code = nodes(map[string]any{"names": []any{"node2", "node3"}, "wait_for": "registered", "wait_timeout": 1})
	assert.Equal(t, 1, code)
	assert.Equal(t, "nodes not registered after 1s: no Node named node3 (nodes: node1, node2)", res["msg"])

	start := time.Now()
	res, code = nodes(map[string]any{"names": []any{"node2"}, "wait_timeout": 1})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "nodes not Ready after 1s: node2 not Ready")
	assert.Less(t, time.Since(start), 5*time.Second)

	// A node that turns Ready during the wait ends it.
	go func() {
		time.Sleep(300 * time.Millisecond)
		ready := k8sNode("node2", corev1.ConditionTrue, nil)
		c.Put(&ready)
	}()
	res, code = nodes(map[string]any{"names": []any{"node2"}, "wait_timeout": 10})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, []any{}, res["not_ready"])

	c.Fail = func(verb string, gvr schema.GroupVersionResource, name string) error {
		return apierrors.NewForbidden(gvr.GroupResource(), name, errors.New("RBAC says no"))
	}
	res, code = nodes(map[string]any{"names": []any{"node1"}})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "list nodes: nodes is forbidden")
}
