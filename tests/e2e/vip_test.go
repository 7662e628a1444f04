//go:build e2e

package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// kubeVIPResources are the kinds kube-vip's manifest holds.
var kubeVIPResources = map[string]schema.GroupVersionResource{
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"DaemonSet":          {Group: "apps", Version: "v1", Resource: "daemonsets"},
}

// dryRunApply applies each document of a manifest to the real API server
// with a server-side dry run: validated and admitted as k3s's deploy
// controller would apply it, stored nowhere. It returns the kinds applied.
func dryRunApply(t *testing.T, dc dynamic.Interface, manifest string) []string {
	t.Helper()
	var kinds []string
	dec := yamlv3.NewDecoder(strings.NewReader(manifest))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if doc == nil {
			continue
		}
		obj := &unstructured.Unstructured{Object: doc}
		gvr, ok := kubeVIPResources[obj.GetKind()]
		require.True(t, ok, "a kind the test knows: %s", obj.GetKind())
		raw, err := yaml.Marshal(doc)
		require.NoError(t, err)
		var ri dynamic.ResourceInterface = dc.Resource(gvr)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dc.Resource(gvr).Namespace(ns)
		}
		_, err = ri.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: "k3s-deploy-e2e", DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, "%s %s", obj.GetKind(), obj.GetName())
		kinds = append(kinds, obj.GetKind())
	}
	return kinds
}

// TestVIPJoinsAgentsThroughTheAddress: k8s_cluster_api_vip on a server and
// an agent. kube-vip cannot run here (kwok runs no containers), so the test
// does its part, putting the address on the server's link as kube-vip's
// leader would; the rest is the role's: kube-vip's manifest where k3s
// deploys it (accepted by the real API server in a server-side dry run),
// the address in the server's tls-san, the agent joined through it, the
// kubeconfig pointed at it; a second run changes nothing; a bad address is
// refused before anything changes.
func TestVIPJoinsAgentsThroughTheAddress(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfv", Subnet: "10.213.20", Controllers: 1, Workers: 1})
	// On the test network, which the bed names (testhosts.SlotEnv moves it).
	vip := strings.TrimSuffix(b.Hosts.BridgeAddr, ".1") + ".100"
	dir := t.TempDir()

	t.Run("bad address", func(t *testing.T) {
		r := c.play(t, clusterPlayArgs(t, c, b, dir, map[string]any{"k8s_cluster_api_vip": vip, "k8s_cluster_api_vip_interface": ""})...)
		require.Error(t, r.err)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), `k8s_cluster_api_vip_interface must name the network interface of the servers that kube-vip puts `+vip+` on (eth0, end0, ...), got \"\"; nothing was changed.`)
		_, err := b.Hosts.Host("node1").Exec("test ! -e /etc/rancher/k3s/config.yaml")
		assert.NoError(t, err)
	})

	// kube-vip's part: its leader holds the address on the server's link.
	require.NoError(t, b.Hosts.Host("node1").AddAddress(vip+"/32"))
	args := clusterPlayArgs(t, c, b, dir, map[string]any{"k8s_cluster_api_vip": vip, "k8s_cluster_api_vip_interface": "eth0"})

	t.Run("converge", func(t *testing.T) {
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "node2 Ready <none>")
		node1, node2 := b.Hosts.Host("node1"), b.Hosts.Host("node2")
		manifest, err := node1.Exec("cat /var/lib/rancher/k3s/server/manifests/kube-vip.yaml")
		require.NoError(t, err)
		assertRootOnly(t, node1, "/var/lib/rancher/k3s/server/manifests/kube-vip.yaml")
		assert.Contains(t, manifest, "image: \"ghcr.io/kube-vip/kube-vip:v1.2.4\"")
		assert.Contains(t, manifest, "{name: address, value: \""+vip+"\"}")
		assert.Contains(t, manifest, "{name: vip_interface, value: \"eth0\"}")
		_, dc, err := b.Clients()
		require.NoError(t, err)
		assert.Equal(t, []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"}, dryRunApply(t, dc, manifest))

		cfg, err := node1.Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Contains(t, cfg, "tls-san:\n  - \""+vip+"\"\n", "the address in the server's tls-san")
		agent, err := node2.Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Contains(t, agent, "server: https://"+vip+":6443", "the agent joins through the address")
		kubeconfig, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
		require.NoError(t, err)
		assert.Contains(t, string(kubeconfig), "server: https://"+vip+":6443")
		// The play's last wait read the Nodes through it; so does a client here.
		cfg2, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
		require.NoError(t, err)
		nodes, err := kubernetes.NewForConfigOrDie(cfg2).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, nodes.Items, 2)
	})

	t.Run("idempotence", func(t *testing.T) {
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "localhost": 0}, r.changed(), r.output)
	})
}
