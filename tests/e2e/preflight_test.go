//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// TestPreflightFindingsChangeNothing: hosts made to show what stops k3s on
// a homelab's machines (docs/testing.md): a Raspberry Pi OS whose kernel
// runs without the memory cgroup, a kernel without vxlan, swap on, a sysctl
// file that turns forwarding off, and the API port taken by another
// program. The play (and its --check) stops
// before anything changes, naming each host, what was seen and the fix.
// Every other play test runs the same checks, strict, on hosts that pass.
func TestPreflightFindingsChangeNothing(t *testing.T) {
	// Short, and mostly SSH: beside the other waiting tests.
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfc", Subnet: "10.213.14", Controllers: 1, Workers: 1})
	server, worker := b.Hosts.Host("node1"), b.Hosts.Host("node2")
	args := clusterPlayArgs(t, c, b, t.TempDir(), map[string]any{"ansible_python_interpreter": "/usr/bin/python3"})

	// In each host's own mount namespace (the machine's files stay as they are): the worker is a
	// Pi OS Bookworm without the memory cgroup (cgroup v1 with memory disabled, as /proc/cgroups
	// says, and /boot/firmware/cmdline.txt), with swap, and a kernel whose vxlan is absent (an
	// empty /sys/module: overlay and br_netfilter still show by what they provide).
	piWithoutMemoryCgroup(t, worker)
	_, err := worker.Exec(`set -e
		printf 'Filename\tType\tSize\tUsed\tPriority\n/var/swap\tfile\t102396\t0\t-2\n' >/root/swaps && mount --bind /root/swaps /proc/swaps
		mount -t tmpfs tmpfs /sys/module
		printf '# hardening\nnet.ipv4.ip_forward = 0\n' >/etc/sysctl.d/60-hardening.conf`)
	require.NoError(t, err)
	// The server's API port held by another program (in its network namespace).
	holder := exec.Command("nsenter", "--net=/run/netns/"+server.NetNS, "/usr/bin/python3", "-c",
		"import socket, sys, time\ns = socket.socket()\ns.bind((sys.argv[1], 6443))\ns.listen()\ntime.sleep(3600)", server.Addr)
	var holderOut strings.Builder
	holder.Stdout, holder.Stderr = &holderOut, &holderOut
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		tcp, _ := server.Exec("cat /proc/net/tcp")
		if strings.Contains(tcp, ":192B 00000000:0000 0A") {
			break
		}
		require.True(t, time.Now().Before(deadline), "port 6443 never taken: %s\n%s", holderOut.String(), tcp)
	}

	untouched := func() {
		t.Helper()
		for _, h := range []string{"node1", "node2"} {
			_, err := b.Hosts.Host(h).Exec("test ! -e /usr/local/bin/k3s && test ! -e /etc/rancher/k3s")
			assert.NoError(t, err, "%s untouched", h)
		}
	}
	for _, mode := range []string{"--check", "run"} {
		t.Run(mode, func(t *testing.T) {
			playArgs := args
			if mode == "--check" {
				playArgs = append(append([]string{}, args...), "--check", "--diff")
			}
			r := c.play(t, playArgs...)
			require.Error(t, r.err, r.output)
			flat := strings.Join(strings.Fields(r.output), " ")
			assert.Regexp(t, `fatal: \[node2\]: FAILED! => .*this host is not ready for k3s as an agent \(nothing was changed\): memory cgroup: cgroup v1 with the memory controller disabled \(/proc/cgroups\)\. Fix: add \\"cgroup_memory=1 cgroup_enable=memory\\" at the end of the single line in /boot/firmware/cmdline\.txt, then reboot; kernel module vxlan: vxlan is neither loaded, built in, nor in /lib/modules/`, flat)
			assert.Contains(t, flat, "not ready for k3s (warning): swap: swap is on: /var/swap.")
			assert.Regexp(t, `not ready for k3s \(warning\): ip forwarding: /etc/sysctl\.d/60-hardening\.conf sets \\?"net\.ipv4\.ip_forward = 0\\?"\. Fix: remove that line`, flat)
			assert.Regexp(t, `fatal: \[node1\]: FAILED! => .*this host is not ready for k3s as a server \(nothing was changed\): port 6443: TCP port 6443 is taken by python3 \(pid \d+\)\. Fix: stop or move what listens there`, flat)
			assert.NotContains(t, r.output, "TASK [gitops.k3s_flux.k8s_cluster : Configure k3s", "stopped before any node task")
			untouched()
		})
	}
	// A node whose clock is off the controller's: here the controller's is a minute ahead
	// (ansible-playbook under faketime), so every node is a minute behind it, less the time
	// the read took (the product counts it in the node's favour and reports it as round_trip).
	t.Run("clock", func(t *testing.T) {
		r := runIn(context.Background(), "", c.env(t), "faketime", append([]string{"-f", "+60s", "ansible-playbook"}, args...)...)
		require.Error(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		for _, host := range []string{"node1", "node2"} {
			assert.Regexp(t, `fatal: \[`+host+`\]: FAILED! => .*this host is not ready for k3s as an? (server|agent) \(nothing was changed\): .*; clock: the node's clock is \d+ s behind the Ansible controller's\. Fix: turn on time synchronisation \(timedatectl set-ntp true`, flat)
			behind, roundTrip := clockFinding(t, r.output, host)
			// 60 s, less up to the round trip; each side rounded to the second (±0.5).
			assert.GreaterOrEqual(t, behind, 60-roundTrip-1, "%s: %v s behind with a round trip of %v s", host, behind, roundTrip)
			assert.LessOrEqual(t, behind, 61.0, host)
		}
		untouched()
	})
	t.Logf("%s", preflightCost(t, worker))
}

// clockFinding is the clock finding of host's failed task in a play's
// output: the seconds its clock is behind, and the round trip the
// product measured.
func clockFinding(t *testing.T, output, host string) (behind, roundTrip float64) {
	t.Helper()
	prefix := "fatal: [" + host + "]: FAILED! => "
	for _, line := range strings.Split(output, "\n") {
		raw, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		var result struct {
			Preflight []struct {
				Check     string   `json:"check"`
				Seen      string   `json:"seen"`
				RoundTrip *float64 `json:"round_trip"`
			} `json:"preflight"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &result), raw)
		for _, f := range result.Preflight {
			if f.Check != "clock" {
				continue
			}
			_, err := fmt.Sscanf(f.Seen, "the node's clock is %g s behind", &behind)
			require.NoError(t, err, f.Seen)
			require.NotNil(t, f.RoundTrip, "%s: the clock finding has no round_trip", host)
			return behind, *f.RoundTrip
		}
	}
	require.Fail(t, "no clock finding", "%s: %s", host, output)
	return 0, 0
}

// preflightCost runs module k3s_node_info on the node (its binary,
// k3s_node, left there by the plays) with and without preflight, for the
// note: what the checks add to a re-run.
func preflightCost(t *testing.T, h interface{ Exec(string) (string, error) }) string {
	t.Helper()
	bin, err := h.Exec("ls -d /var/lib/gitops.k3s_flux/bin/k3s_node-* 2>/dev/null | head -n 1")
	if err != nil || strings.TrimSpace(bin) == "" {
		return "preflight cost: no k3s_node binary kept on the node (kept only with pipelining)"
	}
	timeIt := func(args string) time.Duration {
		_, err := h.Exec(fmt.Sprintf("echo '%s' >/root/args.json", args))
		require.NoError(t, err)
		start := time.Now()
		for range 10 {
			_, _ = h.Exec(strings.TrimSpace(bin) + " /root/args.json >/dev/null")
		}
		return time.Since(start) / 10
	}
	without := timeIt(`{"_ansible_module_name": "k3s_node_info"}`)
	with := timeIt(`{"_ansible_module_name": "k3s_node_info", "preflight": {"role": "agent", "mode": "warn"}}`)
	return fmt.Sprintf("k3s_node_info on the node: %s without preflight, %s with it (each with nsenter and a shell)", without.Round(time.Millisecond), with.Round(time.Millisecond))
}

// piCmdline is a Raspberry Pi OS Bookworm's /boot/firmware/cmdline.txt.
const piCmdline = "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait"

// piFirmware is a boot hook (testhosts.BootHooks) that models a Raspberry
// Pi's kernel: without cgroup_enable=memory on the command line that
// cmdline.txt gives it, it runs without the memory cgroup, as cgroup v1's
// /proc/cgroups and v2's cgroup.controllers then say (files bound over
// them for this boot).
const piFirmware = `if ! grep -qw cgroup_enable=memory /boot/firmware/cmdline.txt; then
  printf '#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t0\t1\t0\n' >/var/lib/testhost/cgroups
  mount --bind /var/lib/testhost/cgroups /proc/cgroups
  if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
    printf 'cpuset cpu io pids\n' >/var/lib/testhost/controllers
    mount --bind /var/lib/testhost/controllers /sys/fs/cgroup/cgroup.controllers
  fi
fi
`

// piWithoutMemoryCgroup makes h a Pi OS Bookworm whose kernel runs without
// the memory cgroup: /boot/firmware/cmdline.txt without the cgroup words,
// and piFirmware run at every boot, this one included.
func piWithoutMemoryCgroup(t *testing.T, h interface {
	Exec(string) (string, error)
	WriteFile(string, []byte, os.FileMode) error
}) {
	t.Helper()
	_, err := h.Exec("mkdir -p /boot/firmware")
	require.NoError(t, err)
	require.NoError(t, h.WriteFile("/boot/firmware/cmdline.txt", []byte(piCmdline+"\n"), 0o644))
	require.NoError(t, h.WriteFile(testhosts.BootHooks+"/pi-firmware", []byte(piFirmware), 0o755))
	_, err = h.Exec("sh " + testhosts.BootHooks + "/pi-firmware")
	require.NoError(t, err)
}
