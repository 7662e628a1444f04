package preflight

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

const release = "6.6.31+rpt-rpi-v8"

// readyHost lays out a host k3s runs on: cgroup v2 with memory, the
// modules loaded, no swap, the tools, plenty of space, no port taken.
func readyHost(t *testing.T) (Host, string) {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
		"proc/modules":                     "overlay 212992 0 - Live 0x0\nbr_netfilter 32768 0 - Live 0x0\nvxlan 118784 0 - Live 0x0\n",
		"proc/swaps":                       "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
		"proc/net/tcp":                     "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0\n",
	}
	for name, content := range files {
		writeFile(t, root, name, content)
	}
	tools := map[string]bool{"systemctl": true, "curl": true, "sha256sum": true}
	return Host{
		Root: root, Release: release,
		LookPath: func(name string) (string, error) {
			if tools[name] {
				return "/usr/bin/" + name, nil
			}
			return "", errors.New("not found")
		},
		FreeDisk: func(string) (uint64, error) { return 20 << 30, nil },
	}, root
}

func writeFile(t *testing.T, root, name, content string) {
	t.Helper()
	path := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// listen adds a TCP listener on port held by a process named comm.
func listen(t *testing.T, root string, port, pid int, comm, inode string) {
	t.Helper()
	line := "   1: 00000000:" + hex4(port) + " 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 " + inode + " 1 0000000000000000 100 0 0 10 0\n"
	f, err := os.OpenFile(filepath.Join(root, "proc/net/tcp"), os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	dir := filepath.Join(root, "proc", strconv.Itoa(pid))
	writeFile(t, root, filepath.Join("proc", strconv.Itoa(pid), "comm"), comm+"\n")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
	require.NoError(t, os.Symlink("socket:["+inode+"]", filepath.Join(dir, "fd", inode)))
}

func hex4(n int) string { return fmt.Sprintf("%04X", n) }

var server = Want{Role: "server", Etcd: true, InstallSource: "script", DataDir: "/var/lib/rancher/k3s", APIPort: 6443}

func checks(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity+": "+f.Check)
	}
	return out
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		want   Want
		setup  func(t *testing.T, h *Host, root string)
		expect []string
		fix    string // in the first finding's fix
	}{
		{name: "ready", want: server},
		{name: "cgroup v2 without memory on Pi OS Bookworm", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io pids\n")
			writeFile(t, root, "boot/firmware/cmdline.txt", "console=serial0,115200 root=PARTUUID=1 rootwait\n")
			writeFile(t, root, "boot/cmdline.txt", "# moved to /boot/firmware/cmdline.txt\n")
		}, expect: []string{"error: memory cgroup"}, fix: `add "cgroup_memory=1 cgroup_enable=memory" at the end of the single line in /boot/firmware/cmdline.txt, then reboot`},
		{name: "cgroup v1 memory disabled on an older Pi OS", want: server, setup: func(t *testing.T, h *Host, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers")))
			writeFile(t, root, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t0\t1\t0\n")
			writeFile(t, root, "boot/cmdline.txt", "console=serial0 root=/dev/mmcblk0p2\n")
		}, expect: []string{"error: memory cgroup"}, fix: "/boot/cmdline.txt"},
		{name: "cgroup v1 with memory: ready", want: server, setup: func(t *testing.T, h *Host, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers")))
			writeFile(t, root, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t4\t50\t1\n")
		}},
		{name: "a PC without memory: GRUB", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "sys/fs/cgroup/cgroup.controllers", "cpu io\n")
		}, expect: []string{"error: memory cgroup"}, fix: "GRUB_CMDLINE_LINUX"},
		{name: "vxlan missing on Ubuntu on a Pi", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "proc/modules", "overlay 1 0 - Live 0x0\nbr_netfilter 1 0 - Live 0x0\n")
			writeFile(t, root, "lib/modules/"+release+"/modules.dep", "kernel/fs/overlayfs/overlay.ko.zst:\n")
			writeFile(t, root, "etc/os-release", "NAME=\"Ubuntu\"\nID=ubuntu\n")
			writeFile(t, root, "proc/device-tree/model", "Raspberry Pi 4 Model B Rev 1.4\x00")
		}, expect: []string{"error: kernel module vxlan"}, fix: "linux-modules-extra-raspi"},
		{name: "vxlan not needed without flannel's vxlan backend", want: Want{Role: "agent", FlannelBackend: "none", DataDir: "/var/lib/rancher/k3s"}, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "proc/modules", "overlay 1 0 - Live 0x0\nbr_netfilter 1 0 - Live 0x0\n")
		}},
		{name: "modules loadable, built in, or shown by what they provide", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "proc/modules", "")
			writeFile(t, root, "lib/modules/"+release+"/modules.dep", "kernel/drivers/net/vxlan/vxlan.ko.xz: kernel/net/ipv4/udp_tunnel.ko.xz\n")
			writeFile(t, root, "proc/filesystems", "nodev\tsysfs\nnodev\toverlay\n")
			writeFile(t, root, "proc/sys/net/bridge/bridge-nf-call-iptables", "1\n")
		}},
		{name: "modules missing on a PC", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "proc/modules", "")
		}, expect: []string{"error: kernel module overlay", "error: kernel module br_netfilter", "error: kernel module vxlan"}, fix: "modprobe overlay"},
		{name: "forwarding turned off by a sysctl file", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "etc/sysctl.d/10-router.conf", "net.ipv4.ip_forward = 1\n")
			writeFile(t, root, "usr/lib/sysctl.d/50-default.conf", "net/ipv4/ip_forward=1\n")
			writeFile(t, root, "etc/sysctl.conf", "# hardening\nnet.ipv4.ip_forward=0\n")
		}, expect: []string{"warning: ip forwarding"}, fix: "remove that line"},
		{name: "forwarding off, then on by a later file", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "usr/lib/sysctl.d/10-off.conf", "-net.ipv4.conf.all.forwarding = 0\n")
			writeFile(t, root, "etc/sysctl.d/99-k3s.conf", "net.ipv4.ip_forward = 1\n")
		}},
		{name: "a file in /etc hides the same name in /usr/lib", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "usr/lib/sysctl.d/60-net.conf", "net.ipv4.ip_forward = 0\n")
			writeFile(t, root, "etc/sysctl.d/60-net.conf", "# forwarding left to k3s\n")
		}},
		{name: "swap on", want: server, setup: func(t *testing.T, h *Host, root string) {
			writeFile(t, root, "proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/var/swap\tfile\t102396\t0\t-2\n")
		}, expect: []string{"warning: swap"}, fix: "dphys-swapfile"},
		{name: "no curl nor wget, no sha256sum, no init", want: server, setup: func(t *testing.T, h *Host, root string) {
			h.LookPath = func(string) (string, error) { return "", errors.New("not found") }
		}, expect: []string{"error: init system", "error: download tool", "error: sha256sum"}},
		{name: "airgap needs no download tool", want: Want{Role: "agent", InstallSource: "airgap", DataDir: "/var/lib/rancher/k3s"}, setup: func(t *testing.T, h *Host, root string) {
			h.LookPath = func(name string) (string, error) {
				if name == "systemctl" || name == "sha256sum" {
					return "/usr/bin/" + name, nil
				}
				return "", errors.New("not found")
			}
		}},
		{name: "little space", want: server, setup: func(t *testing.T, h *Host, root string) {
			h.FreeDisk = func(string) (uint64, error) { return 512 << 20, nil }
		}, expect: []string{"error: free space"}, fix: "about 1 GiB"},
		{name: "some space", want: server, setup: func(t *testing.T, h *Host, root string) {
			h.FreeDisk = func(string) (uint64, error) { return 2 << 30, nil }
		}, expect: []string{"warning: free space"}},
		{name: "the API port taken by another program", want: server, setup: func(t *testing.T, h *Host, root string) {
			listen(t, root, 6443, 812, "nginx", "4242")
		}, expect: []string{"error: port 6443"}, fix: "ss -ltnp 'sport = :6443'"},
		{name: "ports held by k3s itself: ready", want: server, setup: func(t *testing.T, h *Host, root string) {
			listen(t, root, 6443, 901, "k3s-server", "5001")
			listen(t, root, 10250, 901, "k3s-server", "5002")
			listen(t, root, 2379, 902, "k3s", "5003")
		}},
		{name: "a holder that cannot be read while k3s runs: k3s's", want: Want{Role: "agent", K3sRunning: true, DataDir: "/var/lib/rancher/k3s"}, setup: func(t *testing.T, h *Host, root string) {
			listen(t, root, 10250, 901, "k3s", "7001")
			require.NoError(t, os.RemoveAll(filepath.Join(root, "proc", "901")))
		}},
		{name: "a holder that cannot be read, k3s not running", want: Want{Role: "agent", DataDir: "/var/lib/rancher/k3s"}, setup: func(t *testing.T, h *Host, root string) {
			listen(t, root, 10250, 901, "kubelet", "7001")
			require.NoError(t, os.RemoveAll(filepath.Join(root, "proc", "901")))
		}, expect: []string{"error: port 10250"}, fix: "ss -ltnp"},
		{name: "etcd's ports matter only with etcd", want: Want{Role: "server", DataDir: "/var/lib/rancher/k3s"}, setup: func(t *testing.T, h *Host, root string) {
			listen(t, root, 2379, 777, "etcd", "6001")
		}},
		{name: "an agent: the kubelet's port only", want: Want{Role: "agent", DataDir: "/var/lib/rancher/k3s"}, setup: func(t *testing.T, h *Host, root string) {
			listen(t, root, 6443, 812, "nginx", "4242")
			listen(t, root, 10250, 813, "kubelet", "4243")
		}, expect: []string{"error: port 10250"}},
		{name: "ufw without k3s's ports", want: server, setup: func(t *testing.T, h *Host, root string) {
			h.Firewall = func() (firewall.State, error) {
				return firewall.State{Firewall: firewall.UFW, Allowed: []string{"allow 22/tcp", "allow 6443/tcp", "allow 2379:2380/tcp", "allow 10250/tcp"}}, nil
			}
		}, expect: []string{"error: firewall"}, fix: "open them: ufw allow 8472/udp comment 'gitops.k3s_flux: flannel vxlan' (or let role k8s_cluster open them: k8s_cluster_firewall: true)"},
		{name: "ufw without k3s's ports, opened next", want: Want{Role: "agent", DataDir: "/var/lib/rancher/k3s", FirewallOpened: true}, setup: func(t *testing.T, h *Host, root string) {
			h.Firewall = func() (firewall.State, error) { return firewall.State{Firewall: firewall.UFW}, nil }
		}, expect: []string{"warning: firewall"}, fix: "none by hand"},
		{name: "firewalld letting everything in", want: Want{Role: "agent", DataDir: "/var/lib/rancher/k3s", ClusterCIDRs: []string{"10.42.0.0/16"}}, setup: func(t *testing.T, h *Host, root string) {
			h.Firewall = func() (firewall.State, error) {
				return firewall.State{Firewall: firewall.Firewalld, Allowed: []string{"10250/tcp", "8472/udp", "from 10.42.0.0/16"}}, nil
			}
		}},
		{name: "a firewall that cannot be read", want: server, setup: func(t *testing.T, h *Host, root string) {
			h.Firewall = func() (firewall.State, error) { return firewall.State{}, errors.New("ufw: exit status 1") }
		}, expect: []string{"warning: firewall"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, root := readyHost(t)
			if tc.setup != nil {
				tc.setup(t, &h, root)
			}
			got := Check(h, tc.want)
			assert.Equal(t, tc.expect, checks(got))
			if tc.fix != "" {
				require.NotEmpty(t, got)
				assert.Contains(t, got[0].Fix, tc.fix)
			}
			for _, f := range got {
				assert.NotEmpty(t, f.Seen, f.Check)
				assert.NotEmpty(t, f.Fix, f.Check)
			}
		})
	}
}

func TestClosedPortsNameEachAndTheCommands(t *testing.T) {
	h, _ := readyHost(t)
	h.Firewall = func() (firewall.State, error) {
		return firewall.State{Firewall: firewall.UFW, Allowed: []string{"allow 22/tcp"}}, nil
	}
	got := Check(h, Want{Role: "agent", DataDir: "/var/lib/rancher/k3s", ServiceCIDRs: []string{"10.43.0.0/16"}})
	require.Len(t, got, 1)
	assert.Equal(t, "ufw is active and does not let in 10250/tcp (kubelet), 8472/udp (flannel vxlan), from 10.43.0.0/16 (services)", got[0].Seen)
	assert.Equal(t, "open them: ufw allow 10250/tcp comment 'gitops.k3s_flux: kubelet'; ufw allow 8472/udp comment 'gitops.k3s_flux: flannel vxlan'; "+
		"ufw allow from 10.43.0.0/16 comment 'gitops.k3s_flux: services' (or let role k8s_cluster open them: k8s_cluster_firewall: true)", got[0].Fix)
}

func TestForwardingNamesTheFile(t *testing.T) {
	h, root := readyHost(t)
	writeFile(t, root, "etc/sysctl.conf", "net.ipv4.ip_forward=0\n")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/sysctl.d"), 0o755))
	// Debian's link: /etc/sysctl.conf read as 99-sysctl.conf, before a 99-z file.
	require.NoError(t, os.Symlink(filepath.Join(root, "etc/sysctl.conf"), filepath.Join(root, "etc/sysctl.d/99-sysctl.conf")))
	writeFile(t, root, "etc/sysctl.d/99-zz-vpn.conf", "net.ipv4.ip_forward = 1\n")
	assert.Empty(t, Check(h, server))
	writeFile(t, root, "etc/sysctl.d/99-zz-vpn.conf", "net.ipv4.ip_forward = 0\n")
	got := Check(h, server)
	require.Len(t, got, 1)
	assert.Equal(t, `/etc/sysctl.d/99-zz-vpn.conf sets "net.ipv4.ip_forward = 0"`, got[0].Seen)
}

func TestTakenPortNamesItsProcess(t *testing.T) {
	h, root := readyHost(t)
	listen(t, root, 6443, 812, "nginx", "4242")
	got := Check(h, server)
	require.Len(t, got, 1)
	assert.Equal(t, "TCP port 6443 is taken by nginx (pid 812)", got[0].Seen)
}
