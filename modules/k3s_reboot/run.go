package k3sreboot

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// bootIDFile is where Linux tells the id of the current boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// host is what Run needs of the host.
type host struct {
	ReadFile func(path string) ([]byte, error)
	LookPath func(name string) (string, error)
	// Schedule starts command detached from the module, to run once the
	// module has returned.
	Schedule func(command []string) error
}

// command is how to reboot a host: systemd's systemctl where it is, else
// the init system's reboot (OpenRC, BusyBox).
func command(lookPath func(string) (string, error)) ([]string, error) {
	if _, err := lookPath("systemctl"); err == nil {
		return []string{"systemctl", "reboot"}, nil
	}
	if _, err := lookPath("reboot"); err == nil {
		return []string{"reboot"}, nil
	}
	return nil, errors.New("neither systemctl nor reboot is on the host's PATH: reboot it by hand")
}

// run reads the boot id, then (not in check mode) schedules the reboot.
func run(_ context.Context, req *ansible.Request, n host) (*ansible.Result, error) {
	raw, err := n.ReadFile(bootIDFile)
	if err != nil {
		return nil, fmt.Errorf("read the boot id: %w", err)
	}
	command, err := command(n.LookPath)
	if err != nil {
		return nil, err
	}
	res := &ansible.Result{Changed: true}
	res.Set("rebooted", false)
	res.Set("command", strings.Join(command, " "))
	res.Set("previous_boot_id", strings.TrimSpace(string(raw)))
	if req.CheckMode {
		return res, nil
	}
	if err := n.Schedule(command); err != nil {
		return res, fmt.Errorf("schedule %s: %w", strings.Join(command, " "), err)
	}
	return res, nil
}

// scheduleDetached runs command a second from now in a session of its own,
// without the module's output: the module's answer goes back over the
// connection first, and the reboot does not wait for the connection.
func scheduleDetached(command []string) error {
	cmd := exec.Command("sh", append([]string{"-c", `sleep 1; exec "$@"`, "sh"}, command...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
