//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestPrepareAPi: a worker that is a Pi OS Bookworm whose kernel runs
// without the memory cgroup (as TestPreflightFindingsChangeNothing makes
// it). With k8s_cluster_prepare, --check --diff shows the cmdline.txt edit
// and the modules-load.d file; a run writes both and stops, naming the
// host to reboot; once it runs with the new command line, the same play
// converges.
func TestPrepareAPi(t *testing.T) {
	t.Parallel()
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfm", Subnet: "10.213.15", Controllers: 1, Workers: 1})
	worker := b.Hosts.Host("node2")
	args := clusterPlayArgs(t, c, b, t.TempDir(), map[string]any{"ansible_python_interpreter": "/usr/bin/python3", "k8s_cluster_prepare": true})
	rebooted := piWithoutMemoryCgroup(t, worker)
	_, err := worker.Exec("mkdir -p /etc/modules-load.d && mount -t tmpfs tmpfs /etc/modules-load.d")
	require.NoError(t, err)
	const cmdline = piCmdline

	r := c.play(t, append(args, "--check", "--diff")...)
	require.Error(t, r.err, "the kernel still lacks the memory cgroup: %s", r.output)
	assert.Contains(t, r.output, "+"+cmdline+" cgroup_memory=1 cgroup_enable=memory")
	assert.Contains(t, r.output, "/etc/modules-load.d/k3s.conf")
	got, err := worker.Exec("cat /boot/firmware/cmdline.txt")
	require.NoError(t, err)
	assert.Equal(t, cmdline+"\n", got, "check mode writes nothing")

	r = c.play(t, args...)
	require.Error(t, r.err, r.output)
	flat := strings.Join(strings.Fields(r.output), " ")
	assert.Contains(t, flat, "node2 must reboot before k3s can run")
	got, err = worker.Exec("cat /boot/firmware/cmdline.txt /etc/modules-load.d/k3s.conf")
	require.NoError(t, err)
	assert.Contains(t, got, cmdline+" cgroup_memory=1 cgroup_enable=memory\n")
	assert.Contains(t, got, "overlay\nbr_netfilter\nvxlan\n")
	for _, h := range []string{"node1", "node2"} {
		_, err := b.Hosts.Host(h).Exec("test ! -e /usr/local/bin/k3s")
		assert.NoError(t, err, "%s: nothing installed", h)
	}

	// Rebooted with the new command line: the kernel has the memory cgroup.
	rebooted()
	r = c.play(t, args...)
	require.NoError(t, r.err, r.output)
	assert.Contains(t, r.output, "node2 Ready")
	assert.Equal(t, 0, r.recap["node2"]["failed"])
}
