package k3sconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// TestURLPasswordsMasked: a password in a URL of k3s's config (a proxy for
// S3) or of a registry mirror is masked in every form it can take (as
// written, percent-decoded, percent-encoded again), in the diff, the
// old file's side included, and in a failure's message and invocation.
func TestURLPasswordsMasked(t *testing.T) {
	const written = "s3cr%40t%3apw%21"
	forms := []string{written, "s3cr@t:pw!", "s3cr%40t%3Apw%21", "s3cr@t:pw%21"}
	withURL := "http://homelab:" + written + "@proxy.lan:3128"
	for _, tc := range []struct {
		name   string
		module *ansible.Module
		run    ansible.RunFunc
		before string // the file on the node
		args   map[string]any
		msg    string // a failure's, else success
	}{
		{name: "config: a proxy for S3", module: Module, run: Run,
			args: map[string]any{"role": "server", "config": map[string]any{"etcd-s3-proxy": withURL}}},
		{name: "config: the old file's proxy replaced", module: Module, run: Run, before: "etcd-s3-proxy: \"" + withURL + "\"\n",
			args: map[string]any{"role": "server", "config": map[string]any{"etcd-s3-proxy": "http://proxy2.lan:3128"}}},
		{name: "config: a bad option beside it", module: Module, run: Run,
			args: map[string]any{"role": "servr", "config": map[string]any{"etcd-s3-proxy": withURL}}, msg: "role"},
		{name: "registries: credentials in a mirror's URL are refused", module: RegistriesModule, run: RunRegistries,
			args: map[string]any{"mirrors": map[string]any{"docker.io": map[string]any{"endpoint": []any{"https://k3s:" + written + "@mirror.lan:5000"}}}},
			msg:  "mirrors.docker.io.endpoint[0]: containerd does not use credentials in a mirror's URL (https://k3s:xxxxx@mirror.lan:5000): give them in configs.mirror.lan:5000.auth"},
		{name: "registries: the old file's mirror URL replaced", module: RegistriesModule, run: RunRegistries,
			before: "mirrors:\n  docker.io:\n    endpoint:\n    - " + withURL + "\n",
			args:   map[string]any{"mirrors": map[string]any{"docker.io": map[string]any{"endpoint": []any{"https://mirror.lan:5000"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "file.yaml")
			if tc.before != "" {
				require.NoError(t, os.WriteFile(path, []byte(tc.before), 0o600))
			}
			args := with(tc.args, "path", path, "_ansible_diff", true, "_ansible_verbosity", 3)
			res, code, raw := ansibletest.Run(t, tc.module, tc.run, args)
			if tc.msg != "" {
				assert.Equal(t, 1, code)
				assert.Contains(t, res["msg"], tc.msg)
			} else {
				assert.Equal(t, 0, code, res["msg"])
				assert.NotEmpty(t, res["diff"])
			}
			for _, form := range forms {
				assert.NotContains(t, raw, form)
			}
		})
	}
}
