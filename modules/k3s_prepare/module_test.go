package k3sprepare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

// A Pi OS Bookworm host without the memory cgroup, forwarding off: check
// mode shows the edits and writes nothing; a run writes them and says a reboot is due; a
// second run changes nothing and still says so until the host rebooted.
func TestRunOnAPi(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	write("proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t0\t1\t0\n")
	write("boot/firmware/cmdline.txt", "console=tty1 root=PARTUUID=1 rootwait\n")
	write("proc/sys/net/ipv4/ip_forward", "0\n")
	sysctl := func(path string) string {
		raw, err := os.ReadFile(filepath.Join(root, "proc/sys", path))
		require.NoError(t, err)
		return string(raw)
	}
	var loaded []string
	n := host{Host: preflight.Host{Root: root}, Modprobe: func(_ context.Context, m string) error {
		if m == "vxlan" {
			return errors.New("exit status 1")
		}
		loaded = append(loaded, m)
		if m == "br_netfilter" { // what the module provides, as the kernel shows it
			write("proc/sys/net/bridge/bridge-nf-call-iptables", "0\n")
			write("proc/sys/net/bridge/bridge-nf-call-ip6tables", "1\n")
		}
		return nil
	}}
	run := func(args map[string]any) map[string]any {
		res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return run(ctx, req, n)
		}, args)
		require.Equal(t, 0, code, res["msg"])
		return res
	}

	res := run(map[string]any{"_ansible_check_mode": true, "_ansible_diff": true})
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["reboot_required"])
	assert.Len(t, res["diff"], 3)
	raw, _ := os.ReadFile(filepath.Join(root, "boot/firmware/cmdline.txt"))
	assert.Equal(t, "console=tty1 root=PARTUUID=1 rootwait\n", string(raw), "check mode writes nothing")
	assert.Empty(t, loaded)
	assert.Equal(t, "0\n", sysctl("net/ipv4/ip_forward"), "check mode sets nothing")

	res = run(map[string]any{})
	assert.Equal(t, true, res["changed"])
	raw, _ = os.ReadFile(filepath.Join(root, "boot/firmware/cmdline.txt"))
	assert.Equal(t, "console=tty1 root=PARTUUID=1 rootwait cgroup_memory=1 cgroup_enable=memory\n", string(raw))
	raw, _ = os.ReadFile(filepath.Join(root, modulesLoadFile))
	assert.Contains(t, string(raw), "br_netfilter\n")
	assert.Equal(t, []string{"overlay", "br_netfilter"}, loaded)
	raw, _ = os.ReadFile(filepath.Join(root, sysctlFile))
	assert.Equal(t, sysctlConf(), string(raw))
	assert.Equal(t, "1\n", sysctl("net/ipv4/ip_forward"))
	assert.Equal(t, "1\n", sysctl("net/bridge/bridge-nf-call-iptables"))
	assert.Equal(t, []any{"kernel module vxlan: modprobe failed (exit status 1): install the kernel's modules package"}, res["not_prepared"])

	res = run(map[string]any{})
	assert.Equal(t, false, res["changed"], "idempotent")
	assert.Equal(t, true, res["reboot_required"], "until the host runs with the new command line")
}

// A Pi that booted with the cgroup words and still has no memory cgroup
// (cgroup_disable=memory in its cmdline.txt, or its kernel's lack), or
// whose cmdline.txt is not a command line on its first line: the task
// fails naming the cause, changes nothing, and asks for no reboot (which
// would loop: every run would reboot it again).
func TestRunNeverLoops(t *testing.T) {
	for _, tc := range []struct{ name, cmdline, running, msg string }{
		{"cgroup_disable=memory in cmdline.txt", "console=tty1 root=PARTUUID=1 cgroup_disable=memory rootwait cgroup_memory=1 cgroup_enable=memory\n",
			"console=tty1 root=PARTUUID=1 cgroup_disable=memory rootwait cgroup_memory=1 cgroup_enable=memory\n",
			"/boot/firmware/cmdline.txt has cgroup_disable=memory, which keeps the memory cgroup off (k3s cannot run without it): remove it and run this again"},
		{"the kernel's lack", "console=tty1 root=PARTUUID=1 rootwait cgroup_memory=1 cgroup_enable=memory\n",
			"console=tty1 root=PARTUUID=1 rootwait cgroup_memory=1 cgroup_enable=memory\n",
			"the kernel does not offer the memory cgroup although /boot/firmware/cmdline.txt asks for it"},
		{"an empty first line", "\nconsole=tty1 root=PARTUUID=1 rootwait\n", "console=tty1 root=PARTUUID=1 rootwait\n",
			"/boot/firmware/cmdline.txt: its first line is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(name, content string) {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
			}
			write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io pids\n")
			write("boot/firmware/cmdline.txt", tc.cmdline)
			write("proc/cmdline", tc.running)
			n := host{Host: preflight.Host{Root: root}, Modprobe: func(context.Context, string) error {
				t.Error("modprobe run: bad input changes nothing")
				return nil
			}}
			res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) { return run(ctx, req, n) }, map[string]any{})
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			assert.NotEqual(t, true, res["reboot_required"])
			raw, err := os.ReadFile(filepath.Join(root, "boot/firmware/cmdline.txt"))
			require.NoError(t, err)
			assert.Equal(t, tc.cmdline, string(raw), "left as it is")
			assert.NoFileExists(t, filepath.Join(root, modulesLoadFile))
			assert.NoFileExists(t, filepath.Join(root, sysctlFile))
		})
	}
}
