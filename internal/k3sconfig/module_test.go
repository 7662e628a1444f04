package k3sconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

const (
	testToken      = "K10test-cluster-token::server:0123456789abcdef"
	testAgentToken = "agent-secret-9876543210"
)

func baseArgs(path string) map[string]any {
	return map[string]any{
		"path": path, "role": "server", "token": testToken, "cluster_init": true,
		"config": map[string]any{"node-label": []any{"zone=a"}, "agent-token": testAgentToken, "write-kubeconfig-mode": "0600"},
	}
}

// with is args with some keys set (a copy).
func with(args map[string]any, kv ...any) map[string]any { return ansibletest.With(args, kv...) }

// runModule runs k3s_config and checks that no secret reached its output.
func runModule(t *testing.T, args map[string]any) (map[string]any, int) {
	t.Helper()
	res, code, raw := ansibletest.Run(t, Module, Run, args)
	assert.NotContains(t, raw, testToken)
	assert.NotContains(t, raw, testAgentToken)
	return res, code
}

func TestModuleLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc", "rancher", "k3s", "config.yaml")

	res, code := runModule(t, with(baseArgs(path), "_ansible_check_mode", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["restart_needed"])
	assert.NoDirExists(t, filepath.Dir(path), "check mode creates nothing")

	res, code = runModule(t, baseArgs(path))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, path, res["path"])
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(redact(string(content))))
	assert.Equal(t, hex.EncodeToString(sum[:]), res["checksum"], "the checksum leaves the token out")
	assert.Contains(t, string(content), "token: "+testToken)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temp file left behind")

	res, code = runModule(t, baseArgs(path))
	require.Equal(t, 0, code)
	assert.Equal(t, false, res["changed"], "second run is a no-op")
	assert.Equal(t, false, res["restart_needed"])

	changed := with(baseArgs(path), "config", map[string]any{"node-label": []any{"zone=b"}, "agent-token": testAgentToken, "write-kubeconfig-mode": "0600"},
		"_ansible_check_mode", true, "_ansible_diff", true)
	res, code = runModule(t, changed)
	require.Equal(t, 0, code)
	assert.Equal(t, true, res["changed"])
	diff := res["diff"].(map[string]any)
	assert.Equal(t, path, diff["before_header"])
	assert.Contains(t, diff["before"], "  - zone=a\n")
	assert.Contains(t, diff["after"], "  - zone=b\n")
	assert.Contains(t, diff["before"], "\ntoken: <redacted>\n")
	assert.Contains(t, diff["after"], "\ntoken: <redacted>\n", "an unchanged token is not marked changed")
	assert.Contains(t, diff["after"], "agent-token: <redacted>\n")
	again, _ := os.ReadFile(path)
	assert.Equal(t, content, again, "check mode with diff writes nothing")

	res, code = runModule(t, with(changed, "_ansible_check_mode", false, "backup", true))
	require.Equal(t, 0, code)
	backupFile := res["backup_file"].(string)
	old, err := os.ReadFile(backupFile)
	require.NoError(t, err)
	assert.Equal(t, content, old)
	info, _ = os.Stat(backupFile)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the backup holds the token too")

	res, code = runModule(t, with(baseArgs(path), "state", "absent"))
	require.Equal(t, 0, code)
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["restart_needed"])
	assert.NoFileExists(t, path)
	res, _ = runModule(t, with(baseArgs(path), "state", "absent"))
	assert.Equal(t, false, res["changed"])
}

func TestModuleFixesPermissionsWithoutRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	res, code := runModule(t, baseArgs(path))
	require.Equal(t, 0, code, res["msg"])
	require.NoError(t, os.Chmod(path, 0o644))

	res, code = runModule(t, baseArgs(path))
	require.Equal(t, 0, code)
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, false, res["restart_needed"], "content unchanged")
	info, _ := os.Stat(path)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestModuleDropIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	res, code := runModule(t, map[string]any{"path": path, "role": "agent", "drop_in": "50-labels", "config": map[string]any{"node-label+": []any{"disk=ssd"}}})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, path+".d/50-labels.yaml", res["path"])
	assert.FileExists(t, path+".d/50-labels.yaml")
	assert.NoFileExists(t, path)

	res, code = runModule(t, map[string]any{"path": path, "role": "agent", "drop_in": "../escape"})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "drop_in must be a plain file name")
}

func TestModuleBadInputChangesNothing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.yaml")
	require.NoError(t, os.WriteFile(target, []byte("old: content\n"), 0o600))
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(target, link))
	notDir := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))

	cases := []struct {
		name string
		args map[string]any
		msg  string
	}{
		{"symlink", with(baseArgs(link)), "is a symlink"},
		{"directory", with(baseArgs(dir)), "is a directory"},
		{"unwritable", with(baseArgs(filepath.Join(notDir, "config.yaml"))), "inspect " + notDir},
		{"config not a dict", with(baseArgs(target), "config", []any{"a"}), "argument 'config' is of type <class 'list'> and we were unable to convert to dict"},
		{"unknown key", with(baseArgs(target), "config", map[string]any{"tls-sans": []any{"x"}}), "did you mean tls-san?"},
		{"missing role", map[string]any{"path": target}, "missing required arguments: role"},
		{"server and cluster_init", with(baseArgs(target), "server", "https://a:6443"), "parameters are mutually exclusive: server|cluster_init"},
		{"secret in a bad value", with(baseArgs(target), "config", map[string]any{"agent-token": testAgentToken, "zz": 1}), "config.zz is not a k3s server flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, code := runModule(t, tc.args)
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			got, _ := os.ReadFile(target)
			assert.Equal(t, "old: content\n", string(got))
		})
	}
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 3, "no temp or backup file left")
}

func TestRedactHandEditedFile(t *testing.T) {
	before := "# edited by hand\ntoken: 'abc' # old\nt: abc\nagent-token:\n  - x\nnode-name: n1\ndatastore-endpoint: \"postgres://u:pw@db/k3s\"\n"
	got := redact(before)
	assert.NotContains(t, got, "abc")
	assert.NotContains(t, got, "pw@db")
	assert.Contains(t, got, "# edited by hand\n")
	assert.Contains(t, got, "token: <redacted>\n")
	assert.Contains(t, got, "t: <redacted>\n")
	assert.Contains(t, got, "  - <redacted>\n")
	assert.Contains(t, got, "node-name: n1\n")
	assert.True(t, strings.HasSuffix(got, "\n"))
}

// Nothing in a result may let a reader test a guessed secret: a changed
// token is said to have changed, and the checksum is the same whatever
// the token.
func TestNothingDerivedFromASecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	first, code := runModule(t, baseArgs(path))
	require.Equal(t, 0, code, first["msg"])

	other := with(baseArgs(path), "token", "another-token-value", "_ansible_check_mode", true, "_ansible_diff", true)
	res, code, raw := ansibletest.Run(t, Module, Run, other)
	require.Equal(t, 0, code, res["msg"])
	assert.NotContains(t, raw, "another-token-value")
	assert.Equal(t, true, res["restart_needed"])
	assert.Equal(t, first["checksum"], res["checksum"], "the checksum does not depend on the token")
	diff := res["diff"].(map[string]any)
	assert.Contains(t, diff["before"], "\ntoken: <redacted>\n")
	assert.Contains(t, diff["after"], "\ntoken: <redacted, changed>\n")
	assert.Contains(t, diff["after"], "agent-token: <redacted>\n", "the agent token did not change")
	assert.NotRegexp(t, `[0-9a-f]{12}`, diff["after"], "no hash of anything in the diff")
}

func TestNodeName(t *testing.T) {
	host := func() (string, error) { return "Node1", nil }
	id := func() string { return "5a1b2c3d" }
	none := func() string { return "" }
	for _, tc := range []struct {
		config map[string]any
		nodeID func() string
		want   string
	}{
		{map[string]any{}, id, "node1"},
		{map[string]any{"node-name": "Edge-A"}, id, "edge-a"},
		{map[string]any{"node-name": "x", "with-node-id": true}, id, "x-5a1b2c3d"},
		{map[string]any{"with-node-id": true}, id, "node1-5a1b2c3d"},
		{map[string]any{"with-node-id": true}, none, ""},
	} {
		assert.Equal(t, tc.want, NodeName(tc.config, host, tc.nodeID), "%v", tc.config)
	}
	assert.Equal(t, "", NodeName(nil, func() (string, error) { return "", assert.AnError }, id))
}

func TestReadNodeID(t *testing.T) {
	saved := NodeIDFile
	t.Cleanup(func() { NodeIDFile = saved })
	NodeIDFile = filepath.Join(t.TempDir(), "id")
	assert.Equal(t, "", readNodeID(), "no file yet")
	require.NoError(t, os.WriteFile(NodeIDFile, []byte("5a1b2c3d\n"), 0o644))
	assert.Equal(t, "5a1b2c3d", readNodeID())
}

// A file on the node written in any YAML style shows no secret in the diff:
// the line-based text when it leaks nothing, else the parsed file rendered
// again; "changed" compares the parsed values.
func TestRedactAnyStyle(t *testing.T) {
	const secret = "s3cr3t-Value"
	ours := "token: " + secret + "\nnode-name: n1\n"
	for name, tc := range map[string]struct {
		before, want string
		same         bool // the parsed token is ours
	}{
		"flow style (parsed)":        {"{token: " + secret + ", node-name: n1}\n", "{token: \"<redacted>\", node-name: n1}\n", true},
		"JSON (parsed)":              {`{"token": "` + secret + `", "node-name": "n1"}`, "{\"token\": \"<redacted>\", \"node-name\": \"n1\"}\n", true},
		"block scalar":               {"token: |-\n  " + secret + "\nnode-name: n1\n", "token: <redacted>\n  <redacted>\nnode-name: n1\n", true},
		"block scalar, kept newline": {"token: |\n  " + secret + "\n", "token: <redacted>\n  <redacted>\n", false},
		"on the line after":          {"token:\n  " + secret + "\nnode-name: n1\n", "token:\n  <redacted>\nnode-name: n1\n", true},
		"multi-line quoted":          {"token: \"" + secret[:4] + "\n  " + secret[4:] + "\"\n", "token: <redacted>\n  <redacted>\n", false},
		"inside a flow list":         {"agent-token: [" + secret + "]\n", "agent-token: <redacted>\n", true},
		"does not parse":             {"token: " + secret + "\n  bad: [indent\n", "<not shown: does not parse>", true},
		"as written, by lines":       {"# mine\ntoken: '" + secret + "' # old\n", "# mine\ntoken: <redacted>\n", true},
	} {
		t.Run(name, func(t *testing.T) {
			b, a := redactPairWith(configRedactor, tc.before, ours)
			assert.Equal(t, tc.want, b)
			assert.NotContains(t, b+a, secret)
			assert.NotContains(t, b+a, secret[4:])
			want := "token: <redacted, changed>\nnode-name: n1\n"
			if tc.same || tc.want == "<not shown: does not parse>" {
				want = "token: <redacted>\nnode-name: n1\n"
			}
			assert.Equal(t, want, a)
		})
	}
}
