// Package ansibletest runs modules in tests the way Ansible does and keeps
// golden files (sidecar docs, rendered output) in step with the code.
package ansibletest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/docs"
)

// Update rewrites golden files instead of comparing them: go test ./... -update.
var Update = flag.Bool("update", false, "rewrite golden files and sidecar docs")

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

// Golden compares got with testdata file path, or rewrites it under -update.
func Golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test -update")
	require.Equal(t, string(want), string(got), "%s is out of date: run `make docs` (go test ./... -update)", path)
}

// CheckSidecar fails when plugins/modules/<name>.yml differs from what the
// module's spec renders.
func CheckSidecar(t *testing.T, m *ansible.Module) {
	t.Helper()
	got, err := docs.Sidecar(m)
	require.NoError(t, err)
	Golden(t, filepath.Join(RepoRoot(t), "plugins", "modules", m.Name+".yml"), got)
}

// RepoRoot is the directory holding the collection's go.mod.
func RepoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(data, []byte("module github.com/gitops-k3s-flux/k3s_flux\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no collection go.mod above the test")
		dir = parent
	}
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
