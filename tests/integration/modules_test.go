//go:build integration

package integration

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
	"github.com/gitops-k3s-flux/k3s_flux/internal/registry"
)

// builtModules runs the module binaries as Ansible does (`<binary>
// <args-file>`, the module named in the args), built by `make build`.
type builtModules struct {
	t    *testing.T
	root string
}

func modules(t *testing.T) builtModules {
	root := golden.RepoRoot(t)
	out, err := build(root)
	require.NoError(t, err, "make build: %s", out)
	return builtModules{t: t, root: root}
}

// build is `make build`, made once for the tests that run side by side.
func build(root string) ([]byte, error) {
	built.Do(func() { built.out, built.err = exec.Command("make", "-C", root, "build").CombinedOutput() })
	return built.out, built.err
}

var built struct {
	sync.Once
	out []byte
	err error
}

func (m builtModules) run(module string, args map[string]any) (map[string]any, int, string) {
	m.t.Helper()
	bin, ok := registry.BinaryPath(m.root, module, "linux_amd64")
	require.True(m.t, ok, "no module %s", module)
	path := filepath.Join(m.t.TempDir(), "args")
	withName := map[string]any{"_ansible_module_name": module}
	maps.Copy(withName, args)
	raw, err := json.Marshal(withName)
	require.NoError(m.t, err)
	require.NoError(m.t, os.WriteFile(path, raw, 0o600))
	cmd := exec.Command(bin, path)
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
