package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFiles(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	return filepath.Join(dir, "config.yaml")
}

func TestConfigMergesDropInsAsK3s(t *testing.T) {
	path := writeFiles(t, map[string]string{
		"config.yaml":                  "node-label:\n  - a=1\ndebug: true\nnode-name: one\n",
		"config.yaml.d/20-b.yaml":      "node-label+:\n  - b=2\nnode-name: two\n",
		"config.yaml.d/10-a.yml":       "node-label+: c=3\n",
		"config.yaml.d/30-ignored.txt": "node-name: ignored\n",
	})
	entries, ok, err := loadConfig(path)
	require.NoError(t, err)
	require.True(t, ok)
	args, warnings := configArgs("agent", entries)
	assert.Empty(t, warnings)
	assert.Equal(t, []string{"--node-label=a=1", "--node-label=c=3", "--node-label=b=2", "--debug=true", "--node-name=two"}, args)
	s, err := parseArgs("agent", append(args, "--node-label=cli=4"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a=1", "c=3", "b=2", "cli=4"}, s["node-label"])
	assert.Equal(t, "two", s.str("node-name", ""))
}

func TestUnknownKeys(t *testing.T) {
	path := writeFiles(t, map[string]string{"config.yaml": "tls-san: [a,b]\nnot-a-flag: x\ndisable-apiserver-lb: true\n"})
	entries, _, err := loadConfig(path)
	require.NoError(t, err)

	args, warnings := configArgs("server", entries)
	assert.Equal(t, []string{"Unknown flag --not-a-flag found in config.yaml, skipping", "Unknown flag --disable-apiserver-lb found in config.yaml, skipping"}, warnings)
	s, err := parseArgs("server", args)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, s["tls-san"])

	args, warnings = configArgs("agent", entries)
	assert.Empty(t, warnings, "an agent does not filter")
	_, err = parseArgs("agent", args)
	assert.EqualError(t, err, "flag provided but not defined: -tls-san")
}

func TestNoConfigAndSplitting(t *testing.T) {
	_, ok, err := loadConfig(filepath.Join(t.TempDir(), "config.yaml"))
	require.NoError(t, err)
	assert.False(t, ok, "a missing config is ignored")
	s, err := parseArgs("server", []string{"--disable", "traefik,servicelb", "--cluster-init", "-t", "x"})
	require.NoError(t, err)
	assert.Equal(t, []string{"traefik", "servicelb"}, s["disable"])
	assert.True(t, s.bool("cluster-init"))
	assert.Equal(t, "x", s.str("token", ""))
}

func TestFullToken(t *testing.T) {
	hash, pass, ok := parseFullToken("K10abc::server:secret")
	assert.True(t, ok)
	assert.Equal(t, "abc", hash)
	assert.Equal(t, "secret", pass)
	_, _, ok = parseFullToken("plain")
	assert.False(t, ok)
}
