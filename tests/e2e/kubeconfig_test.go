//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// workKubeconfig is the user's own ~/.kube/config, with a context of
// another cluster whose user logs in with a password: kept, the password
// never shown.
const workPassword = "work-cluster-password-e2e-5b7c1d"

const workKubeconfig = `apiVersion: v1
kind: Config
preferences: {}
current-context: work
clusters:
- name: work
  cluster:
    insecure-skip-tls-verify: true
    server: https://k8s.work.example:6443
users:
- name: me@work
  user:
    username: me
    password: ` + workPassword + `
contexts:
- name: work
  context:
    cluster: work
    namespace: default
    user: me@work
`

// TestKubeconfigMergeKeepsOtherContexts: k8s_cluster_kubeconfig_merge:
// ~/.kube/config adds the cluster to the user's own kubeconfig as context
// homelab, pointed at the first server, keeping the user's other context
// (and it current), 0600, with no credential of either (its password, the
// admin's key) in -vvv --diff
// output; the context reaches the cluster; a second run changes nothing;
// reset takes the context out and keeps the rest.
func TestKubeconfigMergeKeepsOtherContexts(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfg", Subnet: "10.213.19", Controllers: 1})
	home := t.TempDir()
	kube := filepath.Join(home, ".kube", "config")
	require.NoError(t, os.MkdirAll(filepath.Dir(kube), 0o700))
	require.NoError(t, os.WriteFile(kube, []byte(workKubeconfig), 0o600))
	env := []string{"HOME=" + home}
	args := clusterPlayArgs(t, c, b, t.TempDir(), map[string]any{"k8s_cluster_kubeconfig_merge": "~/.kube/config", "k8s_cluster_name": "homelab"})

	t.Run("merged", func(t *testing.T) {
		r := c.playWith(t, env, append(args, "--diff", "-vvv")...)
		require.NoError(t, r.err, r.output)
		assert.NotContains(t, r.output, workPassword)
		admin, err := b.Hosts.Host("node1").Exec("cat /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		adminCfg, err := clientcmd.Load([]byte(admin))
		require.NoError(t, err)
		key := adminCfg.AuthInfos["default"].ClientKeyData
		require.NotEmpty(t, key)
		assert.NotContains(t, r.output, base64.StdEncoding.EncodeToString(key), "the admin's key")
		assert.NotContains(t, r.output, strings.Split(string(key), "\n")[1], "the admin's key")

		info, err := os.Stat(kube)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		cfg, err := clientcmd.LoadFromFile(kube)
		require.NoError(t, err)
		assert.Equal(t, "work", cfg.CurrentContext)
		assert.Equal(t, workPassword, cfg.AuthInfos["me@work"].Password)
		assert.Equal(t, "https://"+b.Hosts.Host("node1").Addr+":6443", cfg.Clusters["homelab"].Server)
		assert.Contains(t, cfg.Clusters["homelab"].Extensions, "gitops.k3s_flux", "marked as the collection's")
		backups, err := filepath.Glob(kube + ".*~")
		require.NoError(t, err)
		require.Len(t, backups, 1, "the user's file kept before the first merge")
		kept, err := os.ReadFile(backups[0])
		require.NoError(t, err)
		assert.Equal(t, workKubeconfig, string(kept))

		rest, err := clientcmd.NewNonInteractiveClientConfig(*cfg, "homelab", nil, nil).ClientConfig()
		require.NoError(t, err)
		nodes, err := kubernetes.NewForConfigOrDie(rest).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err, "the merged context reaches the cluster")
		assert.Len(t, nodes.Items, 1)
	})

	t.Run("idempotence", func(t *testing.T) {
		r := c.playWith(t, env, args...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "localhost": 0}, r.changed(), r.output)
	})

	t.Run("reset takes it out", func(t *testing.T) {
		reset := []string{"-i", b.Hosts.Inventory, filepath.Join(c.root, "playbooks", "reset.yml"), args[len(args)-2], args[len(args)-1],
			"-e", "k8s_cluster_reset_confirmed=true"}
		r := c.playWith(t, env, reset...)
		require.NoError(t, r.err, r.output)
		cfg, err := clientcmd.LoadFromFile(kube)
		require.NoError(t, err)
		assert.NotContains(t, cfg.Contexts, "homelab")
		assert.NotContains(t, cfg.Clusters, "homelab")
		assert.NotContains(t, cfg.AuthInfos, "homelab")
		assert.Equal(t, "work", cfg.CurrentContext)
		assert.Equal(t, workPassword, cfg.AuthInfos["me@work"].Password)
	})
}
