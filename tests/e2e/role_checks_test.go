//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoleRefusesBadVariablesBeforeAnyHost: role k8s_cluster's checks of
// its variables alone (one task: a re-run pays for one) stop the play with
// the message that names the variable, before any host is contacted: the
// inventory's hosts point at a closed port on the loopback address, so a
// host contacted would be UNREACHABLE instead.
func TestRoleRefusesBadVariablesBeforeAnyHost(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	dir := t.TempDir()
	inventory := func(controllers int) string {
		var b strings.Builder
		b.WriteString("[k3s_controllers]\n")
		for i := 1; i <= controllers; i++ {
			fmt.Fprintf(&b, "node%d ansible_host=127.0.0.1 ansible_port=9\n", i)
		}
		b.WriteString("[k3s_workers]\nnode9 ansible_host=127.0.0.1 ansible_port=9\n[k3s_cluster:children]\nk3s_controllers\nk3s_workers\n")
		path := filepath.Join(dir, fmt.Sprintf("inventory-%d.ini", controllers))
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
		return path
	}
	// The user's kubeconfig reached through a link: the same file as the one written.
	require.NoError(t, os.Symlink(filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "config")))
	for _, tc := range []struct {
		name        string
		controllers int
		vars        map[string]any
		want        string
	}{
		{"two controllers", 2, nil,
			"2 controllers in group k3s_controllers: embedded etcd needs a majority to keep quorum, so an even number tolerates no more failures than one fewer. Use 1, 3 or 5."},
		{"airgap without its files", 1, map[string]any{"k8s_cluster_install_source": "airgap"},
			"k8s_cluster_install_source airgap needs k8s_cluster_airgap_binary and k8s_cluster_airgap_script (paths on the controller)."},
		{"an API address that is no address", 3, map[string]any{"k8s_cluster_api_vip": "vip.home.arpa"},
			`k8s_cluster_api_vip must be an IP address (kube-vip holds it on one server), got \"vip.home.arpa\"; nothing was changed.`},
		{"a merge into the kubeconfig written", 1, map[string]any{"k8s_cluster_kubeconfig_merge": filepath.Join(dir, "config")},
			"k8s_cluster_kubeconfig_merge (" + filepath.Join(dir, "config") + ") and k8s_cluster_kubeconfig_dest (" + filepath.Join(dir, "kubeconfig") + ") are the same file"},
		{"an interface that is none", 1, map[string]any{"k8s_cluster_api_vip": "10.0.0.100", "k8s_cluster_api_vip_interface": "eth0; reboot"},
			`k8s_cluster_api_vip_interface must name the network interface of the servers that kube-vip puts 10.0.0.100 on (eth0, end0, ...), got \"eth0; reboot\"; nothing was changed.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]any{"flux_bootstrap_enabled": false, "k8s_cluster_kubeconfig_dest": filepath.Join(dir, "kubeconfig")}
			for k, v := range tc.vars {
				vars[k] = v
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			writeJSON(t, path, vars)
			r := c.play(t, "-i", inventory(tc.controllers), filepath.Join(c.root, "playbooks", "k8s.yml"), "-e", "@"+path)
			require.Error(t, r.err)
			assert.Contains(t, strings.Join(strings.Fields(r.output), " "), tc.want)
			assert.NotContains(t, r.output, "UNREACHABLE", "no host contacted")
			assert.Contains(t, r.output, "Check the controller count, the install source, the API address and the kubeconfig paths")
		})
	}
}
