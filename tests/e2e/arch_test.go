//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// TestArmNodes runs role k8s_cluster on a homelab's mix: an amd64
// controller, an arm64 worker and an armv7 worker (Debian arm64 and armhf
// root filesystems whose every program, sshd and sudo included, runs under
// qemu-user-static), no Python on any. The action plugins send each host
// the binaries built for its CPU, and they really run there.
func TestArmNodes(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfr", Subnet: "10.213.11", Hosts: []testhosts.HostSpec{
		{Name: "node1", Group: "k3s_controllers"},
		{Name: "node2", Group: "k3s_workers", Arch: "arm64"},
		{Name: "node3", Group: "k3s_workers", Arch: "armhf"},
	}})
	node1, node2, node3 := b.Hosts.Host("node1"), b.Hosts.Host("node2"), b.Hosts.Host("node3")
	dir := t.TempDir()
	args := clusterPlayArgs(t, c, b, dir, nil)

	t.Run("arm64 and armv7 hosts without Python", func(t *testing.T) {
		for h, want := range map[*testhosts.Host]string{node2: "Linux aarch64", node3: "Linux armv7l"} {
			out, err := h.Exec("uname -sm; for p in python3 python; do command -v $p && exit 1; done; id -u " + testhosts.User)
			require.NoError(t, err, out)
			assert.Equal(t, want+"\n4242\n", out, h.Name)
		}
	})

	t.Run("converge", func(t *testing.T) {
		// Remote files kept: the module binaries each host was sent stay
		// in its ~/.ansible/tmp to be looked at.
		r := c.playWith(t, []string{"ANSIBLE_KEEP_REMOTE_FILES=1"}, append(args, "-v")...)
		require.NoError(t, r.err, r.output)
		t.Logf("converge with arm64 and armv7 workers: %s", r.duration.Round(100e6))
		assert.Contains(t, r.output, "node2 Ready <none>")
		assert.Contains(t, r.output, "node3 Ready <none>")
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, `"gitops_k3s_flux_platform": "linux_arm64"`)
		assert.Contains(t, flat, `"gitops_k3s_flux_platform": "linux_arm"`)
		assert.Contains(t, flat, `"gitops_k3s_flux_platform": "linux_amd64"`)
		// ELF e_machine (offset 18): b7 00 is aarch64, 28 00 ARM, 3e 00 x86-64. Every
		// module the role runs on a node is the k3s_node binary (k3s_node_info too).
		machine := func(h *testhosts.Host, module string) string {
			out, err := h.Exec(`od -An -tx1 -j18 -N2 "$(ls /home/ansible/.ansible/tmp/*/*_` + module + ` | head -1)" | tr -d ' \n'`)
			require.NoError(t, err, out)
			return out
		}
		assert.Equal(t, "3e00", machine(node1, "k3s_node"), "node1 k3s_node")
		assert.Equal(t, "b700", machine(node2, "k3s_node"), "node2 k3s_node")
		assert.Equal(t, "2800", machine(node3, "k3s_node"), "node3 k3s_node")
		// k3s_node renders the config itself and serves k3s_node_info: no node is sent
		// another binary.
		for _, h := range []*testhosts.Host{node1, node2, node3} {
			out, err := h.Exec("find /home/ansible/.ansible/tmp -type f -name '*_k3s_*' ! -name '*_k3s_node'")
			require.NoError(t, err)
			assert.Empty(t, out, "%s was sent another binary than k3s_node", h.Name)
		}
		for _, h := range []*testhosts.Host{node2, node3} {
			cfg, err := h.Exec("cat /etc/rancher/k3s/config.yaml && systemctl is-active k3s-agent")
			require.NoError(t, err)
			assert.Contains(t, cfg, "server: https://"+b.Hosts.Host("node1").Addr+":6443", h.Name)
			assert.Contains(t, cfg, "active\n", h.Name)
		}
	})

	t.Run("idempotence", func(t *testing.T) {
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		t.Logf("re-run with arm64 and armv7 workers: %s", r.duration.Round(100e6))
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "localhost": 0}, r.changed(), r.output)
	})
}
