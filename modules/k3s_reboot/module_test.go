package k3sreboot

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		found   []string
		want    []string
		wantErr string
	}{
		{name: "systemd", found: []string{"systemctl", "reboot"}, want: []string{"systemctl", "reboot"}},
		{name: "OpenRC", found: []string{"reboot"}, want: []string{"reboot"}},
		{name: "neither", wantErr: "neither systemctl nor reboot is on the host's PATH: reboot it by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := command(lookPathOf(tc.found...))
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func lookPathOf(names ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, n := range names {
			if n == name {
				return "/usr/bin/" + name, nil
			}
		}
		return "", errors.New("not found")
	}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      map[string]any
		scheduled [][]string
		code      int
		msg       string
	}{
		{name: "schedules the reboot", args: map[string]any{}, scheduled: [][]string{{"systemctl", "reboot"}}},
		{name: "check mode schedules nothing", args: map[string]any{"_ansible_check_mode": true}},
		{name: "a bad timeout changes nothing", args: map[string]any{"reboot_timeout": 0}, code: 1, msg: "reboot_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var scheduled [][]string
			node := host{
				ReadFile: func(string) ([]byte, error) { return []byte("2d5a3c3e-6f1d-4c0e-9a8b-5b1e0d1c2f3a\n"), nil },
				LookPath: lookPathOf("systemctl"),
				Schedule: func(c []string) error { scheduled = append(scheduled, c); return nil },
			}
			res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, node)
			}, tc.args)
			assert.Equal(t, tc.code, code, res)
			assert.Equal(t, tc.scheduled, scheduled)
			if tc.code != 0 {
				assert.Contains(t, res["msg"], tc.msg)
				return
			}
			assert.Equal(t, true, res["changed"])
			assert.Equal(t, false, res["rebooted"])
			assert.Equal(t, "systemctl reboot", res["command"])
			assert.Equal(t, "2d5a3c3e-6f1d-4c0e-9a8b-5b1e0d1c2f3a", res["previous_boot_id"])
		})
	}
}
