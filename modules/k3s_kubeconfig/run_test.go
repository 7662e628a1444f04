package k3skubeconfig

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// k3sKey is the admin's client key in the test kubeconfig: it must never
// reach stdout, as the base64 the file holds nor decoded.
const k3sKey = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIK3sSecretAdminKeyMaterial\n-----END EC PRIVATE KEY-----\n"

// k3sYAML is a kubeconfig as k3s writes /etc/rancher/k3s/k3s.yaml.
var k3sYAML = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte("ca cert")) + `
    server: https://127.0.0.1:6443
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: ` + base64.StdEncoding.EncodeToString([]byte("client cert")) + `
    client-key-data: ` + base64.StdEncoding.EncodeToString([]byte(k3sKey)) + `
`

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"content": k3sYAML, "dest": "/tmp/kubeconfig"}), k3sYAML)
}

// No no_log value reaches stdout, whatever shape the arguments take; the
// body runs in check mode, so nothing is written.
func FuzzNoLog(f *testing.F) {
	ansibletest.FuzzNoLog(f, module, map[string]any{"dest": filepath.Join(f.TempDir(), "kubeconfig")}, run)
}

func write(t *testing.T, args map[string]any) (map[string]any, int, string) {
	t.Helper()
	return ansibletest.Run(t, module, run, args)
}

func noSecret(t *testing.T, raw string) {
	t.Helper()
	assert.NotContains(t, raw, "K3sSecretAdminKeyMaterial")
	assert.NotContains(t, raw, base64.StdEncoding.EncodeToString([]byte(k3sKey)))
}

// A directory that was there is the user's: no ignore file is written in it.
func TestWriteIntoAnExistingDirectoryAddsNoIgnoreFile(t *testing.T) {
	dir := t.TempDir()
	res, code, _ := write(t, map[string]any{"content": k3sYAML, "dest": filepath.Join(dir, "kubeconfig")})
	require.Equal(t, 0, code, res["msg"])
	assert.NoFileExists(t, filepath.Join(dir, ".gitignore"))
	assert.Nil(t, res["ignore_file"])
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	dest := filepath.Join(dir, "kubeconfig")
	args := map[string]any{"content": k3sYAML, "dest": dest, "server": "https://10.0.0.11:6443", "cluster_name": "homelab", "_ansible_diff": true}

	// Check mode: reports the change and its diff, writes nothing.
	res, code, raw := write(t, ansibletest.With(args, "_ansible_check_mode", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	noSecret(t, raw)
	assert.NoDirExists(t, dir)

	res, code, raw = write(t, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, "homelab", res["context"])
	assert.Equal(t, "https://10.0.0.11:6443", res["server"])
	noSecret(t, raw)
	diff := res["diff"].(map[string]any)
	assert.Contains(t, diff["after"], "client-key-data: <redacted>")
	assert.Contains(t, diff["after"], "server: https://10.0.0.11:6443")
	assert.Equal(t, "", diff["before"])

	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Contains(t, string(got), "server: https://10.0.0.11:6443")
	assert.Contains(t, string(got), "current-context: homelab")
	assert.Contains(t, string(got), "client-key-data: "+base64.StdEncoding.EncodeToString([]byte(k3sKey)))
	assert.NotContains(t, string(got), "default")
	for path, want := range map[string]os.FileMode{dest: 0o600, dir: 0o700} {
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, info.Mode().Perm(), path)
	}
	// The directory it made is kept out of git (it may be inside the user's repository).
	ignore, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, ".gitignore"), res["ignore_file"])
	assert.Contains(t, string(ignore), "\n*\n")

	// Idempotent.
	res, code, _ = write(t, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
	assert.Nil(t, res["diff"])

	// Same content, wrong mode: fixed, without a diff.
	require.NoError(t, os.Chmod(dest, 0o644))
	res, _, _ = write(t, args)
	assert.Equal(t, true, res["changed"])
	assert.Nil(t, res["diff"])
	info, err := os.Stat(dest)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// Another endpoint: replaced, the old file kept with backup.
	res, code, raw = write(t, ansibletest.With(args, "server", "https://10.0.0.12:6443", "backup", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	noSecret(t, raw)
	diff = res["diff"].(map[string]any)
	assert.Contains(t, diff["before"], "server: https://10.0.0.11:6443")
	assert.Contains(t, diff["before"], "client-key-data: <redacted>")
	backup, _ := res["backup_file"].(string)
	require.NotEmpty(t, backup)
	old, err := os.ReadFile(backup)
	require.NoError(t, err)
	assert.Contains(t, string(old), "server: https://10.0.0.11:6443")
}

func TestKeepsWhatIsNotGiven(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "kubeconfig")
	res, code, _ := write(t, map[string]any{"content": k3sYAML, "dest": dest})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "default", res["context"])
	assert.Equal(t, "https://127.0.0.1:6443", res["server"])
}

func TestFollowsALink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.WriteFile(real, []byte("old"), 0o600))
	link := filepath.Join(dir, "config")
	require.NoError(t, os.Symlink(real, link))
	res, code, _ := write(t, map[string]any{"content": k3sYAML, "dest": link})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, real, res["dest"])
	target, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, real, target, "the link stays a link")
	got, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.Contains(t, string(got), "client-key-data")
}

func TestFailures(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "dangling")))
	for _, tc := range []struct {
		name string
		args map[string]any
		msg  string
	}{
		{"not a kubeconfig", map[string]any{"content": "client-key-data: " + k3sKey + "\n: : :", "dest": filepath.Join(dir, "a")}, "content is not a kubeconfig"},
		{"no clusters", map[string]any{"content": "apiVersion: v1\nkind: Config\n", "dest": filepath.Join(dir, "a")}, "content is not a kubeconfig: it has no clusters"},
		{"server not https", map[string]any{"content": k3sYAML, "dest": filepath.Join(dir, "a"), "server": "http://10.0.0.11:6443"}, `server "http://10.0.0.11:6443" is not an API endpoint: expected https://<host>:<port>`},
		{"server with a path", map[string]any{"content": k3sYAML, "dest": filepath.Join(dir, "a"), "server": "https://10.0.0.11:6443/api"}, "is not an API endpoint"},
		{"dest a directory", map[string]any{"content": k3sYAML, "dest": dir}, "dest " + dir + " is not a regular file"},
		{"dest a dangling link", map[string]any{"content": k3sYAML, "dest": filepath.Join(dir, "dangling")}, "is a link to a missing file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code, raw := write(t, tc.args)
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			noSecret(t, raw)
			assert.NoFileExists(t, filepath.Join(dir, "a"))
		})
	}
}

func TestRedact(t *testing.T) {
	in := "users:\n- name: a\n  user:\n    token: abc\n    password: pw\n    client-key-data: xyz\n    client-certificate-data: cert\n"
	out := redact(in)
	assert.Equal(t, "users:\n- name: a\n  user:\n    token: <redacted>\n    password: <redacted>\n    client-key-data: <redacted>\n    client-certificate-data: cert\n", out)
	assert.False(t, strings.Contains(out, "abc"))
}

// An existing kubeconfig, whatever its style, shows none of its credentials
// in the diff: an auth-provider's tokens, an exec plugin's environment.
func TestRedactAnyStyle(t *testing.T) {
	const secret = "s3cr3t-Value"
	for name, tc := range map[string]struct{ in, want string }{
		"auth-provider tokens": {"users:\n- name: oidc\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        client-id: k\n        id-token: " + secret + "\n        refresh-token: " + secret + "2\n",
			"users:\n- name: oidc\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        client-id: k\n        id-token: <redacted>\n        refresh-token: <redacted>\n"},
		"exec env (parsed)": {"users:\n- name: aws\n  user:\n    exec:\n      command: aws\n      env:\n      - name: AWS_SECRET_ACCESS_KEY\n        value: " + secret + "\n",
			"users:\n  - name: aws\n    user:\n      exec:\n        command: aws\n        env:\n          - name: AWS_SECRET_ACCESS_KEY\n            value: \"<redacted>\"\n"},
		"flow style (parsed)": {`{"users": [{"name": "a", "user": {"token": "` + secret + `"}}]}`,
			"{\"users\": [{\"name\": \"a\", \"user\": {\"token\": \"<redacted>\"}}]}\n"},
		"token on the line after (parsed)": {"users:\n- name: a\n  user:\n    token:\n      " + secret + "\n",
			"users:\n  - name: a\n    user:\n      token: \"<redacted>\"\n"},
		"exec args (parsed)": {"users:\n- name: oidc\n  user:\n    exec:\n      command: kubectl\n      args:\n      - oidc-login\n      - --oidc-client-secret=" + secret + "\n",
			"users:\n  - name: oidc\n    user:\n      exec:\n        command: kubectl\n        args:\n          - \"<redacted>\"\n          - \"<redacted>\"\n"},
		"does not parse": {"users:\n- name: a\n  user: {token: " + secret + "\n", "<not shown: does not parse>"},
	} {
		t.Run(name, func(t *testing.T) {
			out := redact(tc.in)
			assert.Equal(t, tc.want, out)
			assert.NotContains(t, out, secret)
		})
	}
}

// workConfig is a user's own kubeconfig, with a context of another
// cluster whose token must be kept, and never shown.
const workToken = "work-cluster-token-0f9e8d7c"

const workConfig = `apiVersion: v1
kind: Config
clusters:
- name: work
  cluster:
    server: https://k8s.work.example:6443
contexts:
- name: work
  context:
    cluster: work
    user: me@work
    namespace: team-a
current-context: work
users:
- name: me@work
  user:
    token: ` + workToken + `
`

func TestMerge(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(dest, []byte(workConfig), 0o600))
	args := map[string]any{"content": k3sYAML, "dest": dest, "server": "https://10.0.0.11:6443", "cluster_name": "homelab", "merge": true, "_ansible_diff": true}

	res, code, raw := write(t, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, "work", res["context"], "the user's current context is kept")
	noSecret(t, raw)
	assert.NotContains(t, raw, workToken)
	cfg, err := clientcmd.LoadFromFile(dest)
	require.NoError(t, err)
	assert.Equal(t, "work", cfg.CurrentContext)
	assert.Equal(t, workToken, cfg.AuthInfos["me@work"].Token)
	assert.Equal(t, "team-a", cfg.Contexts["work"].Namespace)
	assert.Equal(t, "https://10.0.0.11:6443", cfg.Clusters["homelab"].Server)
	assert.Equal(t, "homelab", cfg.Contexts["homelab"].Cluster)
	assert.Equal(t, "homelab", cfg.Contexts["homelab"].AuthInfo)
	assert.Equal(t, []byte(k3sKey), cfg.AuthInfos["homelab"].ClientKeyData)
	info, err := os.Stat(dest)
	require.NoError(t, err)
	assert.Equal(t, fileMode, info.Mode().Perm())

	t.Run("a second merge changes nothing", func(t *testing.T) {
		before, err := os.ReadFile(dest)
		require.NoError(t, err)
		res, code, _ := write(t, args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		after, err := os.ReadFile(dest)
		require.NoError(t, err)
		assert.Equal(t, before, after)
	})

	t.Run("absent takes out only its own entries", func(t *testing.T) {
		absent := map[string]any{"dest": dest, "cluster_name": "homelab", "merge": true, "state": "absent", "_ansible_diff": true}
		res, code, raw := write(t, absent)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		noSecret(t, raw)
		assert.NotContains(t, raw, workToken)
		cfg, err := clientcmd.LoadFromFile(dest)
		require.NoError(t, err)
		assert.NotContains(t, cfg.Contexts, "homelab")
		assert.NotContains(t, cfg.Clusters, "homelab")
		assert.NotContains(t, cfg.AuthInfos, "homelab")
		assert.Equal(t, "work", cfg.CurrentContext)
		assert.Equal(t, workToken, cfg.AuthInfos["me@work"].Token)

		before, err := os.ReadFile(dest)
		require.NoError(t, err)
		res, code, _ = write(t, absent)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		after, err := os.ReadFile(dest)
		require.NoError(t, err)
		assert.Equal(t, before, after)
	})
}

func TestMergeIntoNothingMakesItCurrent(t *testing.T) {
	dest := filepath.Join(t.TempDir(), ".kube", "config")
	res, code, _ := write(t, map[string]any{"content": k3sYAML, "dest": dest, "cluster_name": "homelab", "merge": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "homelab", res["context"])
	res, code, _ = write(t, map[string]any{"dest": filepath.Join(t.TempDir(), "none"), "cluster_name": "homelab", "merge": true, "state": "absent"})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
}

func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	notKubeconfig := filepath.Join(dir, "notes")
	require.NoError(t, os.WriteFile(notKubeconfig, []byte("clusters: [this is: not]: a kubeconfig\n"), 0o644))
	for _, tc := range []struct {
		name string
		args map[string]any
		msg  string
	}{
		{name: "a file that is no kubeconfig", args: map[string]any{"content": k3sYAML, "dest": notKubeconfig, "cluster_name": "homelab", "merge": true},
			msg: "dest " + notKubeconfig + " is not a kubeconfig"},
		{name: "absent without merge", args: map[string]any{"dest": notKubeconfig, "cluster_name": "homelab", "state": "absent"},
			msg: "state=absent takes only the entries named cluster_name out of a kubeconfig (merge: true), never a whole file"},
		{name: "merge without a name", args: map[string]any{"content": k3sYAML, "dest": notKubeconfig, "merge": true},
			msg: "merge is True but all of the following are missing: cluster_name"},
		{name: "present without content", args: map[string]any{"dest": notKubeconfig},
			msg: "state is present but all of the following are missing: content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code, _ := write(t, tc.args)
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			raw, err := os.ReadFile(notKubeconfig)
			require.NoError(t, err)
			assert.Equal(t, "clusters: [this is: not]: a kubeconfig\n", string(raw), "left as it was")
		})
	}
}

func TestExecArgSecrets(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"kubelogin", []string{"oidc-login", "get-token", "--oidc-issuer-url=https://issuer.example", "--oidc-client-secret=s3cr3t"}, []string{"s3cr3t"}},
		{"value after the flag", []string{"--token", "t0ken", "--region", "eu"}, []string{"t0ken"}},
		{"a flag last", []string{"--password"}, nil},
		{"no secret", []string{"eks", "get-token", "--cluster-name", "prod"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, execArgSecrets(tc.args))
		})
	}
}
