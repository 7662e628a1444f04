//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// builtModules runs the module binaries as Ansible does (`<binary>
// <args-file>`), built by `make build`.
type builtModules struct {
	t   *testing.T
	dir string
}

func modules(t *testing.T) builtModules {
	root := ansibletest.RepoRoot(t)
	out, err := exec.Command("make", "-C", root, "build").CombinedOutput()
	require.NoError(t, err, "make build: %s", out)
	return builtModules{t: t, dir: filepath.Join(root, "plugins", "modules")}
}

func (m builtModules) run(module string, args map[string]any) (map[string]any, int, string) {
	m.t.Helper()
	path := filepath.Join(m.t.TempDir(), "args")
	raw, err := json.Marshal(args)
	require.NoError(m.t, err)
	require.NoError(m.t, os.WriteFile(path, raw, 0o600))
	cmd := exec.Command(filepath.Join(m.dir, module), path)
	out, err := cmd.Output()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else {
		require.NoError(m.t, err)
	}
	var res map[string]any
	require.NoError(m.t, json.Unmarshal(out, &res), "one JSON object on stdout: %s", out)
	return res, code, string(out)
}
