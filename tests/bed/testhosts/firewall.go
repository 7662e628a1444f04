package testhosts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// FirewallUFW is where, inside a host with HostSpec.Firewall "ufw", the
// machine's Python is bound for ufw alone: ufw is a Python program, and a
// host with it has Python, but these hosts must show that nothing of the
// collection needs any. Ansible's interpreter discovery does not look
// there (it tries python3.x and python3 on PATH and a few fixed paths), so
// a module that needed Python still fails on such a host.
const FirewallUFW = MachineDir + "/ufw"

// ufw lays out the host's ufw and returns the shell, run at each boot
// before Python is hidden, that binds it in: a copy of the machine's
// /etc/ufw of its own (ufw writes its rules and ENABLED there), the
// interpreter, its standard library and ufw's package under FirewallUFW
// (PYTHONHOME), and over /usr/sbin/ufw a script that runs the real one
// with them. ufw's rules live in the host's network namespace, which
// outlives the host's reboots as a machine's boot would restore them (its
// ufw.service, from the same files).
func (h *Host) ufw() (string, error) {
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		return "", fmt.Errorf("ufw needs the machine's Python (/usr/bin/python3): %w", err)
	}
	version := filepath.Base(python) // python3.11
	if _, err := os.Stat("/usr/sbin/ufw"); err != nil {
		return "", fmt.Errorf("ufw is not installed on this machine (apt install ufw iptables): %w", err)
	}
	etc := filepath.Join(h.Root, "etc-ufw")
	if _, err := os.Stat(etc); os.IsNotExist(err) {
		if out, err := exec.Command("cp", "-a", "/etc/ufw", etc).CombinedOutput(); err != nil {
			return "", fmt.Errorf("copy /etc/ufw: %w: %s", err, out)
		}
	}
	// Mount points, inside the host's MachineDir as the host sees it.
	outside := filepath.Join(h.Root, privateName(MachineDir), filepath.Base(FirewallUFW))
	for _, d := range []string{"bin", filepath.Join("lib", version), filepath.Join("lib", "python3")} {
		if err := os.MkdirAll(filepath.Join(outside, d), 0o755); err != nil {
			return "", err
		}
	}
	for _, f := range []string{filepath.Join("bin", version), "ufw"} {
		if err := os.WriteFile(filepath.Join(outside, f), nil, 0o755); err != nil {
			return "", err
		}
	}
	wrapper := filepath.Join(h.Root, "ufw-wrapper")
	script := fmt.Sprintf("#!/bin/sh\nPYTHONHOME=%[1]s exec %[1]s/bin/%[2]s %[1]s/ufw \"$@\"\n", FirewallUFW, version)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return "", err
	}
	return fmt.Sprintf(`mount --bind %[1]s /etc/ufw
mount --bind %[2]s %[3]s/bin/%[4]s
mount --bind /usr/lib/%[4]s %[3]s/lib/%[4]s
mount --bind /usr/lib/python3 %[3]s/lib/python3
mount --bind /usr/sbin/ufw %[3]s/ufw
mount --bind %[5]s /usr/sbin/ufw
`, etc, python, FirewallUFW, version, wrapper), nil
}

// EnableUFW enables the host's ufw as its owner would: SSH allowed first,
// then everything else coming in denied (ufw's default).
func (h *Host) EnableUFW() error {
	if h.Firewall != "ufw" {
		return fmt.Errorf("test host %s has no ufw (HostSpec.Firewall)", h.Name)
	}
	_, err := h.Exec("ufw allow 22/tcp && ufw --force enable")
	return err
}
