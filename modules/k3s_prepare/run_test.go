package k3sprepare

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCmdline(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		changed        bool
	}{
		{"Pi OS Bookworm", "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait\n",
			"console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait cgroup_memory=1 cgroup_enable=memory\n", true},
		{"already there", "root=/dev/mmcblk0p2 cgroup_enable=memory cgroup_memory=1 rootwait\n", "root=/dev/mmcblk0p2 cgroup_enable=memory cgroup_memory=1 rootwait\n", false},
		{"one of two", "root=/dev/mmcblk0p2 cgroup_enable=cpuset cgroup_memory=1\n", "root=/dev/mmcblk0p2 cgroup_enable=cpuset cgroup_memory=1 cgroup_enable=memory\n", true},
		{"no newline", "root=/dev/mmcblk0p2", "root=/dev/mmcblk0p2 cgroup_memory=1 cgroup_enable=memory\n", true},
		{"a second line is kept", "root=/dev/sda2\n# note\n", "root=/dev/sda2 cgroup_memory=1 cgroup_enable=memory\n# note\n", true},
		{"extra spaces", "root=/dev/sda2   quiet  \n", "root=/dev/sda2 quiet cgroup_memory=1 cgroup_enable=memory\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := cmdline(tc.in, preflight.CgroupWords)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.changed, changed)
			again, changedAgain := cmdline(got, preflight.CgroupWords)
			assert.Equal(t, got, again, "idempotent")
			assert.False(t, changedAgain)
		})
	}
}

func TestModulesLoad(t *testing.T) {
	assert.Equal(t, "# Written by gitops.k3s_flux: kernel modules k3s needs, loaded at boot.\noverlay\nbr_netfilter\nvxlan\n", modulesLoad([]string{"overlay", "br_netfilter", "vxlan"}))
}

func TestSysctlConf(t *testing.T) {
	assert.Equal(t, "# Written by gitops.k3s_flux: what k3s sets when it starts, kept on by every sysctl --system.\n"+
		"net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\n", sysctlConf())
}

func TestDecide(t *testing.T) {
	bookworm := "console=serial0,115200 root=PARTUUID=1 rootwait\n"
	withWords := "root=/dev/mmcblk0p2 rootwait cgroup_memory=1 cgroup_enable=memory\n"
	bootedWith := "coherent_pool=1M 8250.nr_uarts=1 cgroup_disable=memory " + withWords
	modules := []string{"overlay", "br_netfilter", "vxlan"}
	prepared := func(cmdline string) files {
		return files{Cmdline: map[string]string{"/boot/cmdline.txt": cmdline}, ModulesLoad: modulesLoad(modules), Sysctl: sysctlConf()}
	}
	for _, tc := range []struct {
		name          string
		memoryMissing bool
		files         files
		running       string // /proc/cmdline
		wantPaths     []string
		reboot        bool
		unfixable     bool
		err           string
	}{
		{name: "Pi OS Bookworm without memory: /boot/firmware, not the stub in /boot", memoryMissing: true,
			files:     files{Cmdline: map[string]string{"/boot/firmware/cmdline.txt": bookworm, "/boot/cmdline.txt": "# moved\n"}},
			wantPaths: []string{"/boot/firmware/cmdline.txt", modulesLoadFile, sysctlFile}, reboot: true},
		{name: "edited by an earlier run, not rebooted yet", memoryMissing: true, files: prepared(withWords),
			running: "root=/dev/mmcblk0p2 rootwait\n", reboot: true},
		{name: "memory there: cmdline.txt left alone", files: files{Cmdline: map[string]string{"/boot/firmware/cmdline.txt": bookworm}, ModulesLoad: modulesLoad(modules), Sysctl: sysctlConf()}},
		{name: "a PC without memory: by hand", memoryMissing: true, files: files{ModulesLoad: modulesLoad(modules), Sysctl: sysctlConf()}, unfixable: true},
		{name: "a sysctl file edited by hand is written again", files: files{ModulesLoad: modulesLoad(modules), Sysctl: "net.ipv4.ip_forward = 0\n"}, wantPaths: []string{sysctlFile}},
		{name: "booted with the words and still no memory: the kernel's, no reboot", memoryMissing: true, files: prepared(withWords), running: bootedWith,
			err: "the kernel does not offer the memory cgroup although /boot/cmdline.txt asks for it"},
		{name: "cgroup_disable=memory beside the words: remove it, no reboot", memoryMissing: true,
			files: prepared("root=/dev/mmcblk0p2 cgroup_disable=memory rootwait cgroup_memory=1 cgroup_enable=memory\n"), running: bootedWith,
			err: "/boot/cmdline.txt has cgroup_disable=memory"},
		{name: "cgroup_disable=memory without the words: refused before adding them", memoryMissing: true,
			files: prepared("root=/dev/mmcblk0p2 cgroup_disable=memory rootwait\n"), err: "/boot/cmdline.txt has cgroup_disable=memory, which keeps the memory cgroup off (k3s cannot run without it): remove it and run this again"},
		{name: "cgroup_disable=memory removed by hand since the boot: the reboot it needs", memoryMissing: true, files: prepared(withWords),
			running: "root=/dev/mmcblk0p2 rootwait cgroup_memory=1 cgroup_enable=memory cgroup_disable=memory\n", reboot: true},
		{name: "the firmware's console rewritten: still booted with the words", memoryMissing: true,
			files:   prepared("console=serial0,115200 root=/dev/mmcblk0p2 rootwait cgroup_memory=1 cgroup_enable=memory\n"),
			running: "console=ttyS0,115200 root=/dev/mmcblk0p2 rootwait cgroup_memory=1 cgroup_enable=memory\n", err: "the kernel does not offer the memory cgroup"},
		{name: "an empty first line: refused", memoryMissing: true, files: prepared("\nroot=/dev/mmcblk0p2 rootwait\n"),
			err: "/boot/cmdline.txt: its first line is empty"},
		{name: "a blank first line: refused", memoryMissing: true, files: prepared("  \t\nroot=/dev/mmcblk0p2 rootwait\n"),
			err: "/boot/cmdline.txt: its first line is empty"},
		{name: "an empty file: refused", memoryMissing: true, files: prepared(""), err: "/boot/cmdline.txt: its first line is empty"},
		{name: "no root= on the first line: refused", memoryMissing: true, files: prepared("console=tty1 rootwait\nroot=/dev/mmcblk0p2\n"),
			err: "/boot/cmdline.txt: its first line has no root="},
		{name: "memory there: a cmdline.txt without root= is not ours to judge", files: prepared("console=tty1\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files.Running = tc.running
			p, err := decide(tc.memoryMissing, tc.files, modules)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			var paths []string
			for _, c := range p.Changes {
				paths = append(paths, c.Path)
				assert.NotEqual(t, c.Before, c.After)
			}
			assert.Equal(t, tc.wantPaths, paths)
			assert.Equal(t, tc.reboot, p.RebootRequired)
			assert.Equal(t, tc.unfixable, len(p.Unfixable) > 0)
		})
	}
}
