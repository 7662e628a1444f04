//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// realClusterArgs are clusterPlayArgs for a bed whose servers are the real
// k3s (bed.Options.RealK3s): k3s's own install.sh, downloading the built
// k3s from the bed as from GitHub's releases (k8s_cluster_k3s_release_url).
func realClusterArgs(t *testing.T, c collection, b *bed.Bed, dir string, extra map[string]any) []string {
	t.Helper()
	vars := map[string]any{
		"flux_bootstrap_enabled":         false,
		"k8s_cluster_install_script_url": b.Real.InstallURL,
		"k8s_cluster_k3s_release_url":    b.Real.ReleaseURL,
		"k8s_cluster_k3s_version":        b.Real.Version,
		"k8s_cluster_kubeconfig_dest":    filepath.Join(dir, "kubeconfig"),
	}
	for k, v := range extra {
		vars[k] = v
	}
	path := filepath.Join(dir, "vars.json")
	writeJSON(t, path, vars)
	return []string{"-i", b.Hosts.Inventory, filepath.Join(c.root, "playbooks", "k8s.yml"), "-e", "@" + path}
}

// TestRealK3sSingleServer: one server from bare with k3s's own install.sh
// and the k3s built from its source; the second run changes nothing.
func TestRealK3sSingleServer(t *testing.T) {
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sr1", Subnet: "10.213.30", Controllers: 1, RealK3s: true})
	node1 := b.Hosts.Host("node1")
	dir := t.TempDir()
	args := realClusterArgs(t, c, b, dir, nil)

	r := c.play(t, args...)
	require.NoError(t, r.err, r.output)
	version, err := node1.Exec("k3s --version")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(version, "k3s version "+b.Real.Version+" "), version)
	help, err := node1.Exec("k3s etcd-snapshot save --help")
	require.NoError(t, err)
	assert.Contains(t, help, "--etcd-s3-bucket", "the real k3s's help")
	unit, err := node1.Exec("cat /etc/systemd/system/k3s.service")
	require.NoError(t, err)
	assert.Contains(t, unit, "Type=notify", "the unit k3s's install.sh wrote")

	r = c.play(t, args...)
	require.NoError(t, r.err, r.output)
	assert.Equal(t, map[string]int{"node1": 0, "localhost": 0}, r.changed(), r.output)
}
