//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestK8sPlay runs playbooks/k8s.yml (role k8s_cluster) against SSH test
// hosts and the test bed's API server, through the k3s stand-in.
func TestK8sPlay(t *testing.T) {
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfp", Subnet: "10.213.7", Controllers: 1, Workers: 2})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	play := func(args ...string) playResult {
		return c.play(t, append([]string{"-i", b.Hosts.Inventory, filepath.Join(c.root, "playbooks", "k8s.yml"),
			"-e", "k8s_cluster_install_script_url=" + b.K3s.InstallURL, "-e", "k8s_cluster_kubeconfig_dest=" + kubeconfig,
			"-e", `{"k8s_cluster_agent_config": {"node-label": ["tier=worker"]}}`}, args...)...)
	}

	first := play()
	require.NoError(t, first.err, first.output)
	t.Logf("converge: %s", first.duration.Round(100*time.Millisecond))
	for _, h := range []string{"node1", "node2", "node3"} {
		assert.Greater(t, first.changed()[h], 0, h)
	}

	second := play()
	require.NoError(t, second.err, second.output)
	t.Logf("idempotent re-run: %s", second.duration.Round(100*time.Millisecond))
	assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0}, second.changed(), second.output)

	info, err := os.Stat(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://10.213.7.11:6443", cfg.Host, "server rewritten to the first controller")
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.Eventually(t, func() bool {
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 3 {
			return false
		}
		for i := range nodes.Items {
			if !bed.NodeReady(&nodes.Items[i]) {
				return false
			}
		}
		return true
	}, 30*time.Second, 500*time.Millisecond, "all three nodes Ready, reached with TLS verification through the fetched kubeconfig")
	n, err := kc.CoreV1().Nodes().Get(ctx, "node2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "worker", n.Labels["tier"])

	token, err := b.Hosts.Host("node1").Exec("cat /var/lib/rancher/k3s/server/node-token")
	require.NoError(t, err)
	_, secret, _ := strings.Cut(strings.TrimSpace(token), "::server:")
	require.NotEmpty(t, secret)
	verbose := play("-vvv")
	require.NoError(t, verbose.err)
	for _, out := range []string{first.output, second.output, verbose.output} {
		assert.NotContains(t, out, secret, "the cluster token never reaches Ansible's output")
	}
}
