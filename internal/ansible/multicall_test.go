package ansible_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

func TestExecuteMulti(t *testing.T) {
	named := func(name string) ansible.Entry {
		return ansible.Entry{Module: &ansible.Module{Name: name}, Run: func(context.Context, *ansible.Request) (*ansible.Result, error) {
			r := &ansible.Result{}
			r.Set("ran", name)
			return r, nil
		}}
	}
	entries := map[string]ansible.Entry{"flux_status_info": named("flux_status_info"), "seed_secret": named("seed_secret")}
	args := func(content map[string]any) string {
		path := filepath.Join(t.TempDir(), "args")
		raw, err := json.Marshal(content)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, raw, 0o600))
		return path
	}
	run := func(argv ...string) (map[string]any, int) {
		var out bytes.Buffer
		code := ansible.ExecuteMulti(context.Background(), entries, argv, strings.NewReader(`{"_ansible_module_name": "seed_secret"}`), &out)
		var res map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
		return res, code
	}
	for _, tc := range []struct {
		name string
		argv []string
		want string
	}{
		{"Ansible names it in the args file (FQCN)", []string{"/tmp/x/AnsiballZ_whatever", args(map[string]any{"_ansible_module_name": "gitops.k3s_flux.seed_secret"})}, "seed_secret"},
		{"Ansible names it in the args file (short)", []string{"controller", args(map[string]any{"_ansible_module_name": "flux_status_info"})}, "flux_status_info"},
		{"a link named after it", []string{"/c/plugins/modules/flux_status_info", args(map[string]any{})}, "flux_status_info"},
		{"Ansible's remote copy", []string{"/home/a/.ansible/tmp/x/AnsiballZ_seed_secret", args(map[string]any{})}, "seed_secret"},
		{"args on standard input", []string{"/n/.cache/gitops.k3s_flux/bin/controller-0123", "-"}, "seed_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code := run(tc.argv...)
			require.Equal(t, 0, code, res["msg"])
			assert.Equal(t, tc.want, res["ran"])
		})
	}
	res, code := run("/c/plugins/bin/linux_amd64/controller", args(map[string]any{}))
	assert.Equal(t, 1, code)
	assert.Equal(t, `this binary serves the modules flux_status_info, seed_secret, not "controller" (from _ansible_module_name or the program's name)`, res["msg"])
}
