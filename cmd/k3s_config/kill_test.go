//go:build integration

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKilledMidWriteLeavesTheOldConfig runs the built module under strace,
// which SIGKILLs it as it enters the temp file's write, its fsync or the
// rename: each time the old config stays byte for byte, and the next run
// writes the new one and removes the killed runs' temp files.
func TestKilledMidWriteLeavesTheOldConfig(t *testing.T) {
	strace, err := exec.LookPath("strace")
	require.NoError(t, err, "strace is one of the Makefile's APT_PACKAGES")
	bin := filepath.Join(t.TempDir(), "k3s_config")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	argsFile := func(label string) string {
		raw, err := json.Marshal(map[string]any{"path": path, "role": "server", "token": "kill-test-token-" + label,
			"config": map[string]any{"node-label": []any{"rev=" + label}}})
		require.NoError(t, err)
		f := filepath.Join(t.TempDir(), "args")
		require.NoError(t, os.WriteFile(f, raw, 0o600))
		return f
	}
	runModule := func(args string) map[string]any {
		out, err := exec.Command(bin, args).Output()
		require.NoError(t, err, string(out))
		var res map[string]any
		require.NoError(t, json.Unmarshal(out, &res))
		return res
	}
	require.Equal(t, true, runModule(argsFile("old"))["changed"])
	old, err := os.ReadFile(path)
	require.NoError(t, err)

	for _, syscalls := range []string{"write", "fsync", "rename,renameat,renameat2"} {
		t.Run("killed at "+syscalls, func(t *testing.T) {
			cmd := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace="+syscalls, "-e", "inject="+syscalls+":signal=KILL", bin, argsFile("new"))
			out, err := cmd.Output()
			require.Error(t, err, "the module was not killed: %s", out)
			assert.Empty(t, out, "killed before it could answer")
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(old), string(got), "the old config is intact")
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
			temps, _ := filepath.Glob(filepath.Join(dir, ".config.yaml.tmp-*"))
			assert.NotEmpty(t, temps, "killed after its temp file was made, so mid-write")
		})
	}

	res := runModule(argsFile("new"))
	assert.Equal(t, true, res["changed"])
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(got), "rev=new")
	temps, _ := filepath.Glob(filepath.Join(dir, ".config.yaml.tmp-*"))
	assert.Empty(t, temps, "the killed runs' temp files are gone")
}
