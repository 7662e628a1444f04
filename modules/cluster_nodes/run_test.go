package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
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
			rep := compare(items, tc.wanted)
			assert.Equal(t, tc.missing, rep.Missing)
			assert.Equal(t, tc.notReady, rep.NotReady)
			assert.Equal(t, tc.ready, rep.ready())
			assert.Equal(t, []string{"node1", "node2", "node3"}, names(rep.Nodes), "sorted by name")
		})
	}
	rep := compare(items, nil)
	assert.Equal(t, node{Name: "node1", Ready: true, Roles: []string{"control-plane", "master"}, Version: "v1.36.2+k3s1",
		InternalIP: "10.0.0.1", Reason: "KubeletReady", Message: "ok"}, rep.Nodes[0])
	assert.Equal(t, "NoReadyCondition", rep.Nodes[2].Reason)
	assert.Equal(t, []string{"node1 Ready control-plane,master v1.36.2+k3s1 10.0.0.1", "node2 NotReady <none> v1.36.2+k3s1 10.0.0.1",
		"node3 NotReady <none> v1.36.2+k3s1 10.0.0.1"}, summary(rep.Nodes))
}

func TestNotReadyError(t *testing.T) {
	rep := compare([]corev1.Node{k8sNode("node2", corev1.ConditionFalse, nil)}, []string{"node1", "node2"})
	err := notReadyError(args{Wait: true, WaitTimeout: 5}, rep)
	assert.EqualError(t, err, "nodes not Ready after 5s: no Node named node1 (nodes: node2); node2 not Ready: KubeletReady: ok")
	err = notReadyError(args{}, compare(nil, []string{"node1"}))
	assert.EqualError(t, err, "nodes not Ready: no Node named node1 (nodes: none)")
}

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, module)
}
