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
// without the memory cgroup until its cmdline.txt has the cgroup words
// (piWithoutMemoryCgroup; the k3s stand-in refuses to run there, as k3s
// does). With k8s_cluster_prepare, --check --diff shows the cmdline.txt
// edit, the modules-load.d and sysctl.d files and the reboot it would
// make, and changes nothing; a run writes them, turns forwarding on,
// reboots the Pi without Python (k3s_reboot: a new boot id) and converges; a second run changes nothing and reboots
// nothing.
func TestPrepareAPi(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfm", Subnet: "10.213.15", Controllers: 1, Workers: 1})
	worker := b.Hosts.Host("node2")
	args := clusterPlayArgs(t, c, b, t.TempDir(), map[string]any{"k8s_cluster_prepare": true})
	piWithoutMemoryCgroup(t, worker)
	bootID := func() string {
		out, err := worker.Exec("cat /proc/sys/kernel/random/boot_id")
		require.NoError(t, err)
		return strings.TrimSpace(out)
	}
	firstBoot := bootID()

	r := c.play(t, append(args, "--check", "--diff")...)
	require.NoError(t, r.err, r.output)
	flat := strings.Join(strings.Fields(r.output), " ")
	assert.Contains(t, r.output, "+"+piCmdline+" cgroup_memory=1 cgroup_enable=memory")
	assert.Contains(t, r.output, "/etc/modules-load.d/k3s.conf")
	assert.Contains(t, r.output, "+net.ipv4.ip_forward = 1\n")
	assert.Regexp(t, `TASK \[gitops\.k3s_flux\.k8s_cluster : Reboot each host whose kernel must boot with its prepared command line\] \*+\s+skipping: \[node1\]\s+changed: \[node2\]`, r.output)
	assert.Contains(t, flat, "not ready for k3s (warning): memory cgroup: cgroup v1 with the memory controller disabled (/proc/cgroups). Fix: none by hand: the kernel command line as prepared enables it, and the host reboots before k3s is installed")
	got, err := worker.Exec("cat /boot/firmware/cmdline.txt; ls /etc/modules-load.d; ls /etc/sysctl.d; cat /proc/sys/net/ipv4/ip_forward")
	require.NoError(t, err)
	assert.Equal(t, piCmdline+"\n0\n", got, "check mode writes nothing")
	assert.Equal(t, firstBoot, bootID(), "check mode reboots nothing")

	r = c.play(t, args...)
	require.NoError(t, r.err, r.output)
	assert.Regexp(t, `TASK \[gitops\.k3s_flux\.k8s_cluster : Reboot each host whose kernel must boot with its prepared command line\] \*+\s+skipping: \[node1\]\s+changed: \[node2\]`, r.output)
	assert.NotEqual(t, firstBoot, bootID(), "node2 rebooted")
	got, err = worker.Exec("cat /boot/firmware/cmdline.txt /etc/modules-load.d/k3s.conf /etc/sysctl.d/99-k3s.conf /proc/cgroups")
	require.NoError(t, err)
	assert.Contains(t, got, piCmdline+" cgroup_memory=1 cgroup_enable=memory\n")
	assert.Contains(t, got, "overlay\nbr_netfilter\nvxlan\n")
	assert.Contains(t, got, "net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n")
	assert.Regexp(t, `memory\s+\d+\s+\d+\s+1`, got, "booted with the memory cgroup")
	assert.Contains(t, r.output, "node2 Ready")
	secondBoot := bootID()

	r = c.play(t, args...)
	require.NoError(t, r.err, r.output)
	assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "localhost": 0}, r.changed(), "a second run changes nothing: %s", r.output)
	assert.Equal(t, secondBoot, bootID(), "and reboots nothing")
}
