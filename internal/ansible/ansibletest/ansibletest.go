// Package ansibletest runs modules in tests the way Ansible does and keeps
// the modules' Python files (docs and argument spec) in step with their Go spec.
package ansibletest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/docs"
	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
	"github.com/gitops-k3s-flux/k3s_flux/internal/registry"
)

// Run writes args to an args file, runs the module as Ansible would and
// returns the decoded result, the exit code and the raw stdout.
func Run(t *testing.T, m *ansible.Module, run ansible.RunFunc, args map[string]any) (map[string]any, int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "args")
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	var out bytes.Buffer
	code := ansible.Execute(context.Background(), m, ansible.Input{Args: []string{path}}, &out, run)
	var result map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &result), "stdout must be one JSON object: %s", out.String())
	return result, code, out.String()
}

// CheckModuleFile fails when plugins/modules/<name>.py differs from what
// the module's spec renders (make docs writes it).
func CheckModuleFile(t *testing.T, m *ansible.Module) {
	t.Helper()
	i := slices.IndexFunc(registry.Modules, func(r registry.Module) bool { return r.Name == m.Name })
	require.GreaterOrEqual(t, i, 0, "module %s is not in internal/registry", m.Name)
	binary := registry.Modules[i].Binary
	runsOn := "the host, built for its OS and CPU"
	if binary == registry.ControllerBinary {
		runsOn = "the controller, built for its OS and CPU\n# (fetched from the release on first use)"
	}
	got, err := docs.Python(m, binary, runsOn)
	require.NoError(t, err)
	golden.File(t, filepath.Join(golden.RepoRoot(t), "plugins", "modules", m.Name+".py"), got)
}

// With returns a copy of args with the keys and values of kv (key, value,
// key, value, ...) set.
func With(args map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
