package testhosts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// RootFS returns the cached Debian root filesystem tarball for arch,
// building it first when it is missing (tests/tools/rootfs.sh: debootstrap
// under qemu-user-static, a few minutes once).
func RootFS(arch string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "tools", "rootfs.sh")
	out, err := exec.Command(script, arch).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("%s %s: %w: %s", script, arch, err, ee.Stderr)
		}
		return "", fmt.Errorf("%s %s: %w", script, arch, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// startForeignHost starts a host of another CPU: the root filesystem of
// arch unpacked under the host's directory, the user and its sudo, the
// host key and sshd config written into it, then sshd chrooted into it.
// Every program there, sshd and sudo included, is an arch binary that the
// kernel runs under qemu-user-static (binfmt_misc), so the host is what
// Ansible sees over SSH: `uname -m` answers aarch64.
func (b *Bed) startForeignHost(h *Host, index int, arch string) error {
	tarball, err := RootFS(arch)
	if err != nil {
		return err
	}
	h.Chroot = filepath.Join(h.Root, "rootfs")
	if err := os.MkdirAll(filepath.Join(h.Root, "ssh"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(h.Chroot, 0o755); err != nil {
		return err
	}
	if err := run("tar", "-xf", tarball, "-C", h.Chroot, "--numeric-owner"); err != nil {
		return err
	}
	if err := b.plumb(h, index); err != nil {
		return err
	}
	// The host key is made beside the others (known_hosts reads it there)
	// and copied in.
	hostKey := filepath.Join(h.Root, "ssh", "ssh_host_ed25519_key")
	if err := sshKeygen(hostKey); err != nil {
		return err
	}
	for _, f := range []string{"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"} {
		raw, err := os.ReadFile(filepath.Join(h.Root, "ssh", f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(h.Chroot, "etc", "ssh", f), raw, 0o600); err != nil {
			return err
		}
	}
	pub, err := os.ReadFile(b.KeyFile + ".pub")
	if err != nil {
		return fmt.Errorf("read client key: %w", err)
	}
	if err := writeAuthorizedKeys(filepath.Join(h.Chroot, "home", User), pub); err != nil {
		return err
	}
	for file, line := range identityLines(h.Name) {
		f, err := os.OpenFile(filepath.Join(h.Chroot, file), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
	}
	if err := writeSudoers(filepath.Join(h.Chroot, "etc", "sudoers.d")); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(h.Chroot, BootHooks), 0o755); err != nil {
		return err
	}
	// The config stays under h.Root, seen at the same path inside through
	// the bed directory's bind mount below, so that sshd's command line
	// names this host (isOurSSHD).
	config := filepath.Join(h.Root, "sshd_config")
	if err := os.WriteFile(config, []byte(sshdConfig(h.Addr, "/etc/ssh/ssh_host_ed25519_key")), 0o600); err != nil {
		return err
	}
	// The test bed's directory is seen at its own path inside too: the k3s
	// stand-in finds the bed's API server and CA there, as on the others.
	script := fmt.Sprintf(`set -e
mount -t proc proc %[1]s/proc
mount --rbind /sys %[1]s/sys
mount --rbind /dev %[1]s/dev
mount -t tmpfs -o mode=0755 tmpfs %[1]s/run
mkdir -p %[1]s/run/sshd %[1]s%[4]s
mount --bind %[4]s %[1]s%[4]s
hostname %[2]s
%[5]sexec chroot %[1]s /usr/sbin/sshd -D -e -f %[3]s
`, h.Chroot, h.Name, config, b.Dir, h.boot(h.Chroot, "chroot "+h.Chroot+" sh"))
	return h.start(script, filepath.Join(h.Chroot, MachineDir))
}
