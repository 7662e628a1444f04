// Package golden keeps files generated from the code (golden files, the
// modules' Python files, the registry's lists) in step with it, for tests.
// It imports nothing of the collection, so every package's tests can use it.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Update rewrites golden files instead of comparing them: go test ./... -update.
var Update = flag.Bool("update", false, "rewrite golden files and the modules' Python files")

// File compares got with the file at path, or rewrites it under -update.
func File(t *testing.T, path string, got []byte) {
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
