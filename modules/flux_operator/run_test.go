package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

func TestMergeValues(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "a.yaml")
	require.NoError(t, os.WriteFile(f1, []byte("web:\n  enabled: true\n  port: 9080\nlogLevel: info\n"), 0o600))
	f2 := filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(f2, []byte("logLevel: debug\n"), 0o600))
	got, err := mergeValues([]string{f1, f2}, map[string]any{"web": map[string]any{"enabled": false}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"web": map[string]any{"enabled": false, "port": float64(9080)}, "logLevel": "debug"}, got)

	_, err = mergeValues([]string{filepath.Join(dir, "missing.yaml")}, nil)
	assert.ErrorContains(t, err, "read values_files entry")
}

func TestSameValues(t *testing.T) {
	assert.True(t, sameValues(nil, map[string]any{}))
	assert.True(t, sameValues(map[string]any{"a": int64(1)}, map[string]any{"a": float64(1)}), "numbers compare by value")
	assert.False(t, sameValues(map[string]any{"a": 1}, map[string]any{"a": 2}))
}

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, module)
}

func TestNoOpShortcut(t *testing.T) {
	for v, want := range map[string]bool{"0.59.0": true, "v1.2.3": true, "1.2.3-rc.1": true, "": false, "0.59": false, "^0.59.0": false, ">=0.58.0": false, "0.59.x": false} {
		assert.Equal(t, want, isPinned(v), v)
	}
	assert.Equal(t, "flux-operator", refChartName("oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator"))
	assert.Equal(t, "flux-operator", refChartName("fluxrepo/flux-operator"))
	assert.Equal(t, "", refChartName(t.TempDir()), "a local chart's name is inside it")
}
