package k3sconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileSecrets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("token: K10abc\nnode-name: node1\netcd-s3-secret-key: s3secret\n"), 0o600))
	require.NoError(t, os.MkdirAll(path+".d", 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(path+".d", "50-s3.yaml"), []byte("etcd-s3-access-key: AKIA\nagnt-token: slipped\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(path+".d", "60-bad.yml"), []byte(": not yaml: ["), 0o600))
	assert.Equal(t, []string{"AKIA", "K10abc", "s3secret", "slipped"}, FileSecrets(path))
	assert.Empty(t, FileSecrets(filepath.Join(dir, "missing.yaml")))
}

func TestFileValue(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server: https://10.0.0.2:6443\nnode-name: node1\n"), 0o600))
	assert.Equal(t, "https://10.0.0.2:6443", FileValue(path, "server"))
	assert.Equal(t, "", FileValue(path, "cluster-init"))
	require.NoError(t, os.MkdirAll(path+".d", 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(path+".d", "90-join.yaml"), []byte("server: https://10.0.0.3:6443\n"), 0o600))
	assert.Equal(t, "https://10.0.0.3:6443", FileValue(path, "server"), "a drop-in's value wins")
	assert.Equal(t, "", FileValue(filepath.Join(dir, "missing.yaml"), "server"))
	assert.Equal(t, "https://10.0.0.3:6443", DropInValue(path, "server"))
	assert.Equal(t, "", DropInValue(path, "node-name"), "the config's own value left out")
	assert.Equal(t, "", DropInValue(filepath.Join(dir, "missing.yaml"), "server"))
}

func TestFileList(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "none", files: map[string]string{"config.yaml": "token: x\n"}},
		{name: "a list", files: map[string]string{"config.yaml": "tls-san:\n  - a.example\n  - 10.0.0.9\n"}, want: []string{"a.example", "10.0.0.9"}},
		{name: "a string with commas", files: map[string]string{"config.yaml": "tls-san: a.example, b.example\n"}, want: []string{"a.example", "b.example"}},
		{name: "a drop-in replaces", files: map[string]string{"config.yaml": "tls-san: [a.example]\n", "config.yaml.d/50-x.yaml": "tls-san: [b.example]\n"}, want: []string{"b.example"}},
		{name: "a drop-in's key+ appends", files: map[string]string{"config.yaml": "tls-san: [a.example]\n", "config.yaml.d/50-x.yaml": "tls-san+: [b.example]\n"}, want: []string{"a.example", "b.example"}},
		{name: "drop-ins in order", files: map[string]string{"config.yaml.d/20-b.yaml": "tls-san+: [b]\n", "config.yaml.d/10-a.yaml": "tls-san: [a]\n"}, want: []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
			}
			assert.Equal(t, tc.want, FileList(filepath.Join(dir, "config.yaml"), "tls-san"))
		})
	}
}
