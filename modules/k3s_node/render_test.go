package k3snodemodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

const (
	testRegistryPassword = "registry-password-7531"
	// A client key given as content (k3s_registries' tls.key): never shown.
	testRegistryKey = "-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0LWNsaWVudC1rZXk=\n-----END EC PRIVATE KEY-----\n"
)

// TestRendersFirst: with k3s_config and k3s_registries, the task renders
// k3s's files first, in the same process, and restarts k3s when they
// changed; their results, diffs and masked arguments are the task's.
func TestRendersFirst(t *testing.T) {
	where := testPaths(t)
	dir := t.TempDir()
	configPath, registriesPath := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "registries.yaml")
	f := newFakeNode()
	f.version = testVersion
	f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
	args := map[string]any{
		"role": "server", "_ansible_diff": true,
		"k3s_config": map[string]any{"path": configPath, "role": "server", "token": testToken, "config": map[string]any{"node-label": []any{"zone=a"}}},
		"k3s_registries": map[string]any{"path": registriesPath, "configs": map[string]any{
			"registry.example:5000": map[string]any{
				"auth": map[string]any{"username": "k3s", "password": testRegistryPassword},
				"tls":  map[string]any{"cert": "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n", "key": testRegistryKey}}}},
	}

	res, code := runOn(t, f, where, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, []string{"systemctl restart --no-block k3s.service"}, f.changes(), "restarted once, for both files")
	assert.Equal(t, []any{"restart k3s for its new config"}, res["actions"], "the registry username (k3s) is no secret")
	rendered := res["k3s_config"].(map[string]any)
	assert.Equal(t, true, rendered["restart_needed"])
	assert.Equal(t, configPath, rendered["path"])
	assert.NotContains(t, rendered, "diff", "the diffs are the task's")
	assert.NotContains(t, rendered, "invocation")
	assert.Equal(t, true, res["k3s_registries"].(map[string]any)["restart_needed"])
	diffs := res["diff"].([]any)
	require.Len(t, diffs, 5, "config, registries, its two TLS files, then k3s")
	assert.Contains(t, diffs[0].(map[string]any)["after"], "node-label")
	assert.Equal(t, "<redacted>\n", diffs[3].(map[string]any)["after"], "the client key")
	assert.Contains(t, diffs[4].(map[string]any)["after"], "(restarted for its new config)")
	invocation := res["invocation"].(map[string]any)["module_args"].(map[string]any)
	assert.Equal(t, "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", invocation["k3s_config"].(map[string]any)["token"])
	assert.Equal(t, "server", invocation["k3s_config"].(map[string]any)["role"], "only the secrets are masked")
	for _, path := range []string{configPath, registriesPath} {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	}

	f.commands = nil
	res, code = runOn(t, f, where, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "a second run changes nothing")
	assert.Empty(t, f.changes())
}

func TestRendererFailureChangesNothing(t *testing.T) {
	where := testPaths(t)
	configPath := filepath.Join(t.TempDir(), "config.yaml")
	f := newFakeNode()
	res, code := runOn(t, f, where, map[string]any{
		"role":       "server",
		"k3s_config": map[string]any{"path": configPath, "role": "server", "token": testToken, "config": map[string]any{"token": testToken}},
	})
	assert.Equal(t, 1, code)
	assert.Equal(t, "k3s_config: config.token is set by the module option token: use token instead of config.token", res["msg"])
	assert.Empty(t, f.changes(), "k3s not installed")
	assert.NoFileExists(t, configPath)
}

// TestDecidesBeforeWriting: the renderers are planned first, so a second
// one that fails leaves the first one's file unwritten too.
func TestDecidesBeforeWriting(t *testing.T) {
	where := testPaths(t)
	dir := t.TempDir()
	configPath, registriesPath := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "registries.yaml")
	f := newFakeNode()
	f.version = testVersion
	f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
	res, code := runOn(t, f, where, map[string]any{
		"role":       "server",
		"k3s_config": map[string]any{"path": configPath, "role": "server", "token": testToken},
		"k3s_registries": map[string]any{"path": registriesPath, "configs": map[string]any{
			"registry.example:5000": map[string]any{"tls": map[string]any{"cert_file": filepath.Join(dir, "missing.crt")}}}},
	})
	require.Equal(t, 1, code, res)
	assert.Contains(t, res["msg"], "k3s_registries: ")
	assert.Empty(t, f.changes(), "k3s left alone")
	assert.NoFileExists(t, configPath, "k3s_config's file is not written either")
	assert.NoFileExists(t, registriesPath)
}

func TestRenderersWaitForTheAirgapFiles(t *testing.T) {
	where := testPaths(t)
	configPath := filepath.Join(t.TempDir(), "config.yaml")
	sum := sha256Hex([]byte("x"))
	res, code := runOn(t, newFakeNode(), where, map[string]any{
		"role": "agent", "install_source": "airgap",
		"airgap_binary": "/tmp/k3s", "airgap_binary_sha256": sum, "airgap_script": "/tmp/install.sh", "airgap_script_sha256": sum,
		"k3s_config": map[string]any{"path": configPath, "role": "agent", "token": testToken, "server": "https://10.0.0.1:6443"},
	})
	assert.Equal(t, 1, code)
	assert.Equal(t, true, res["airgap_transfer_needed"])
	assert.NoFileExists(t, configPath, "rendered by the run after the transfer, which reports it")
}

func TestRenderersOnlyWithStatePresent(t *testing.T) {
	res, code := runOn(t, newFakeNode(), testPaths(t), map[string]any{"state": "absent", "k3s_config": map[string]any{"role": "server"}})
	assert.Equal(t, 1, code)
	assert.Equal(t, "k3s_config: only with state present (state absent removes k3s's files)", res["msg"])
}

// A server token that is another secret than the one the server's datastore
// was bootstrapped with is refused before anything is written: k3s would
// refuse to start. The same secret in another form passes.
func TestBootstrapTokenChange(t *testing.T) {
	for name, tc := range map[string]struct {
		token   string
		refused bool
	}{
		"another secret":             {"another-cluster-secret", true},
		"the same secret, full form": {"K10" + strings.Repeat("ab", 32) + "::server:node-token-secret-4242", false},
		"the same secret, bare":      {"node-token-secret-4242", false},
		"the stored token, as it is": {testToken, false},
		"another secret, full form":  {"K10" + strings.Repeat("ab", 32) + "::server:rotated", true},
	} {
		t.Run(name, func(t *testing.T) {
			where := testPaths(t)
			require.NoError(t, os.WriteFile(k3snode.BootstrapTokenPath(where), []byte(testToken+"\n"), 0o600))
			configPath := filepath.Join(t.TempDir(), "config.yaml")
			f := newFakeNode()
			f.version = testVersion
			f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
			for _, check := range []bool{true, false} {
				res, code := runOn(t, f, where, map[string]any{"role": "server", "_ansible_check_mode": check,
					"k3s_config": map[string]any{"path": configPath, "role": "server", "token": tc.token}})
				if !tc.refused {
					require.Equal(t, 0, code, res["msg"])
					continue
				}
				assert.Equal(t, 1, code)
				assert.Contains(t, res["msg"], "k3s_config.token is another secret than the one this server's datastore was bootstrapped with ("+k3snode.BootstrapTokenPath(where)+"): k3s would refuse to start")
				assert.Contains(t, res["msg"], "playbooks/rotate_token.yml")
				assert.NoFileExists(t, configPath, "nothing written")
				assert.Empty(t, f.changes())
			}
		})
	}
}
