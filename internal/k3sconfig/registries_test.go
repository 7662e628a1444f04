package k3sconfig

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

const (
	testRegistryPassword = "registry-pass-5f1e2d"
	testRegistryToken    = "registry-token-77aa09"
)

func registriesArgsFor(path string) map[string]any {
	return map[string]any{
		"path": path,
		"mirrors": map[string]any{
			"docker.io": map[string]any{
				"endpoint": []any{"https://mirror.example.internal:5000"},
				"rewrite":  map[string]any{"^rancher/(.*)": "mirror/rancher/$1"},
			},
			"*": map[string]any{},
		},
		"configs": map[string]any{
			"mirror.example.internal:5000": map[string]any{
				"auth": map[string]any{"username": "k3s", "password": testRegistryPassword},
				"tls":  map[string]any{"ca_file": "/etc/ssl/ca.pem", "insecure_skip_verify": false},
			},
			"ghcr.io": map[string]any{"auth": map[string]any{"identity_token": testRegistryToken}},
		},
	}
}

func runRegistriesModule(t *testing.T, args map[string]any) (map[string]any, int) {
	t.Helper()
	res, code, raw := ansibletest.Run(t, RegistriesModule, RunRegistries, args)
	assert.NotContains(t, raw, testRegistryPassword)
	assert.NotContains(t, raw, testRegistryToken)
	return res, code
}

func TestRegistriesLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc", "rancher", "k3s", "registries.yaml")
	args := registriesArgsFor(path)

	res, code := runRegistriesModule(t, with(args, "_ansible_check_mode", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["restart_needed"])
	assert.NoFileExists(t, path, "check mode writes nothing")

	res, code = runRegistriesModule(t, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	// What k3s reads: the same structure through a real YAML parser.
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(content, &doc))
	assert.Equal(t, map[string]any{
		"mirrors": map[string]any{
			"docker.io": map[string]any{"endpoint": []any{"https://mirror.example.internal:5000"}, "rewrite": map[string]any{"^rancher/(.*)": "mirror/rancher/$1"}},
			"*":         map[string]any{},
		},
		"configs": map[string]any{
			"mirror.example.internal:5000": map[string]any{
				"auth": map[string]any{"username": "k3s", "password": testRegistryPassword},
				"tls":  map[string]any{"ca_file": "/etc/ssl/ca.pem", "insecure_skip_verify": false},
			},
			"ghcr.io": map[string]any{"auth": map[string]any{"identity_token": testRegistryToken}},
		},
	}, doc)
	golden.File(t, "testdata/registries.yaml", content)

	res, code = runRegistriesModule(t, args)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "idempotent")
	assert.Equal(t, false, res["restart_needed"])

	// A changed password: changed, restart, the diff says which secret changed and never what.
	changed := registriesArgsFor(path)
	changed["configs"].(map[string]any)["mirror.example.internal:5000"].(map[string]any)["auth"].(map[string]any)["password"] = "another-pass-0c0c"
	res, code = runRegistriesModule(t, with(changed, "_ansible_diff", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["restart_needed"])
	diff := res["diff"].(map[string]any)
	assert.Contains(t, diff["before"], "password: <redacted>")
	assert.Contains(t, diff["after"], "password: <redacted, changed>")
	assert.Contains(t, diff["after"], "identity_token: <redacted>\n", "the unchanged token is not marked changed")
	assert.NotContains(t, diff["after"], "another-pass-0c0c")

	res, code = runRegistriesModule(t, map[string]any{"path": path, "state": "absent"})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.NoFileExists(t, path)
}

func TestRegistriesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		msg  string
	}{
		{"misspelt mirror key", map[string]any{"mirrors": map[string]any{"docker.io": map[string]any{"endpoints": []any{"https://m"}}}},
			`mirrors.docker.io: unknown key "endpoints" (did you mean endpoint?); k3s reads endpoint, rewrite`},
		{"endpoint without scheme", map[string]any{"mirrors": map[string]any{"docker.io": map[string]any{"endpoint": []any{"mirror:5000"}}}},
			`mirrors.docker.io.endpoint[0]: expected an http or https URL`},
		{"registry with a scheme", map[string]any{"mirrors": map[string]any{"https://docker.io": map[string]any{}}},
			`mirrors.https://docker.io: expected a registry host`},
		// A registry's name becomes the directory of its TLS files: nothing that leaves registries-tls.
		{"registry named ..", map[string]any{"configs": map[string]any{"..": map[string]any{"tls": map[string]any{"ca": "x"}}}},
			`configs...: expected a registry host such as docker.io or registry.example.com:5000 (no scheme, no path), got ".."`},
		{"registry named .", map[string]any{"configs": map[string]any{".": map[string]any{}}}, `configs..: expected a registry host`},
		{"registry named /", map[string]any{"configs": map[string]any{"/": map[string]any{}}}, `configs./: expected a registry host`},
		{"registry with an empty label", map[string]any{"configs": map[string]any{"a..b:5000": map[string]any{}}}, `configs.a..b:5000: expected a registry host`},
		{"registry with an empty port", map[string]any{"mirrors": map[string]any{"docker.io:": map[string]any{}}}, `mirrors.docker.io:: expected a registry host`},
		{"empty registry name", map[string]any{"configs": map[string]any{"": map[string]any{}}}, `configs.: expected a registry host`},
		{"bad rewrite", map[string]any{"mirrors": map[string]any{"docker.io": map[string]any{"rewrite": map[string]any{"(": "x"}}}},
			`mirrors.docker.io.rewrite: "(" is not a regular expression`},
		{"password not a string", map[string]any{"configs": map[string]any{"r.example": map[string]any{"auth": map[string]any{"password": 12345}}}},
			`configs.r.example.auth.password: expected a string, got a number`},
		{"relative tls file", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"ca_file": "ca.pem"}}}},
			`configs.r.example.tls.ca_file: expected an absolute path on the node, got ca.pem`},
		{"cert without key", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"cert_file": "/c.pem"}}}},
			`configs.r.example.tls: a client certificate (cert or cert_file) and its key (key or key_file) go together`},
		{"cert content without key", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"cert": testPEM("CERTIFICATE", "c")}}}},
			`configs.r.example.tls: a client certificate (cert or cert_file) and its key (key or key_file) go together`},
		{"ca content and path", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"ca": testPEM("CERTIFICATE", "c"), "ca_file": "/ca.pem"}}}},
			`configs.r.example.tls: ca and ca_file both given`},
		{"ca that is a key", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"ca": testPEM("PRIVATE KEY", "k")}}}},
			`configs.r.example.tls.ca: expected PEM content (-----BEGIN CERTIFICATE-----), got a PEM PRIVATE KEY`},
		{"two registries, one directory", map[string]any{"configs": map[string]any{
			"r.example:5000": map[string]any{"tls": map[string]any{"ca": testPEM("CERTIFICATE", "c")}},
			"r.example_5000": map[string]any{"tls": map[string]any{"ca": testPEM("CERTIFICATE", "c")}},
		}}, `would be `},
		{"misspelt key, masked", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"kye": testRegistryPassword}}}},
			`configs.r.example.tls: unknown key "kye" (did you mean key?)`},
		{"key not PEM, not shown", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"cert": testPEM("CERTIFICATE", "c"), "key": testRegistryPassword}}}},
			`configs.r.example.tls.key: expected PEM content (-----BEGIN PRIVATE KEY-----), got a string that is not PEM`},
		{"a token k3s would ignore, masked", map[string]any{"configs": map[string]any{"ghcr.io": map[string]any{"auth": map[string]any{"token": testRegistryToken}}}},
			`configs.ghcr.io.auth: unknown key "token" (k3s ignores it, and would pull without credentials: a registry token goes in identity_token, or as the password); k3s reads username, password, auth, identity_token`},
		{"misspelt secret key, masked", map[string]any{"configs": map[string]any{"r.example": map[string]any{"auth": map[string]any{"pasword": testRegistryPassword}}}},
			`configs.r.example.auth: unknown key "pasword" (did you mean password?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "registries.yaml")
			res, code := runRegistriesModule(t, with(tc.args, "path", path))
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			assert.NoFileExists(t, path, "bad input changes nothing")
		})
	}
}

func TestRegistriesRedactHandEdited(t *testing.T) {
	before := "# mine\nconfigs:\n  r.example:\n    auth:\n      password: \"old secret\" # comment\n      auth: dXNlcjpwYXNz\n  other:\n    auth:\n      password: same\n"
	after := "configs:\n  r.example:\n    auth:\n      password: new\n      auth: dXNlcjpwYXNz\n  other:\n    auth:\n      password: same\n"
	b, a := redactPairWith(registriesRedactor, before, after)
	assert.Equal(t, "# mine\nconfigs:\n  r.example:\n    auth:\n      password: <redacted>\n      auth: <redacted>\n  other:\n    auth:\n      password: <redacted>\n", b)
	assert.Equal(t, "configs:\n  r.example:\n    auth:\n      password: <redacted, changed>\n      auth: <redacted>\n  other:\n    auth:\n      password: <redacted>\n", a)
}

func testPEM(kind, body string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: []byte(body)}))
}

func TestRegistriesTLSContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc", "rancher", "k3s", "registries.yaml")
	dir := filepath.Join(filepath.Dir(path), TLSDirName, "r.example_5000")
	key := testPEM("EC PRIVATE KEY", "client-key-c0ffee")
	tls := map[string]any{"ca": testPEM("CERTIFICATE", "ca-1"), "cert": testPEM("CERTIFICATE", "client-1"), "key": key}
	args := func(tls map[string]any) map[string]any {
		return map[string]any{"path": path, "configs": map[string]any{"r.example:5000": map[string]any{"tls": tls}}}
	}
	run := func(args map[string]any) map[string]any {
		t.Helper()
		res, code, raw := ansibletest.Run(t, RegistriesModule, RunRegistries, with(args, "_ansible_diff", true))
		require.Equal(t, 0, code, res["msg"])
		assert.NotContains(t, raw, "Y2xpZW50LWtleS1jMGZmZWU", "the key's content is never shown")
		return res
	}
	diffOf := func(res map[string]any, file string) map[string]any {
		diffs, _ := res["diff"].([]any)
		if one, ok := res["diff"].(map[string]any); ok {
			diffs = []any{one}
		}
		for _, d := range diffs {
			if d := d.(map[string]any); d["after_header"] == filepath.Join(dir, file) {
				return d
			}
		}
		return nil
	}

	res := run(with(args(tls), "_ansible_check_mode", true))
	assert.Equal(t, true, res["changed"])
	assert.NoDirExists(t, filepath.Dir(dir), "check mode writes nothing")

	res = run(args(tls))
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["restart_needed"])
	for file, want := range map[string]any{"ca.crt": tls["ca"], "client.crt": tls["cert"], "client.key": key} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		assert.Equal(t, want, string(raw), file)
		info, err := os.Stat(filepath.Join(dir, file))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), file)
	}
	for d, mode := range map[string]os.FileMode{dir: 0o700, filepath.Dir(dir): 0o700, filepath.Dir(path): 0o755} {
		info, err := os.Stat(d)
		require.NoError(t, err)
		assert.Equal(t, mode, info.Mode().Perm(), d)
	}
	assert.Equal(t, "<redacted>\n", diffOf(res, "client.key")["after"])
	assert.Equal(t, tls["ca"], diffOf(res, "ca.crt")["after"], "a certificate is public")
	content, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(content, &doc))
	assert.Equal(t, map[string]any{"configs": map[string]any{"r.example:5000": map[string]any{"tls": map[string]any{
		"ca_file": filepath.Join(dir, "ca.crt"), "cert_file": filepath.Join(dir, "client.crt"), "key_file": filepath.Join(dir, "client.key"),
	}}}}, doc, "k3s reads the files")

	res = run(args(tls))
	assert.Equal(t, false, res["changed"])
	assert.Equal(t, false, res["restart_needed"])

	// A new key: changed, shown only as changed.
	newKey := testPEM("EC PRIVATE KEY", "client-key-c0ffee-2")
	res = run(args(map[string]any{"ca": tls["ca"], "cert": tls["cert"], "key": newKey}))
	assert.Equal(t, true, res["restart_needed"])
	assert.Equal(t, map[string]any{"before": "<redacted>\n", "after": "<redacted, changed>\n", "before_header": filepath.Join(dir, "client.key"), "after_header": filepath.Join(dir, "client.key")}, diffOf(res, "client.key"))
	assert.Nil(t, diffOf(res, "ca.crt"), "the CA did not change")

	// The client certificate dropped: its files go, the CA stays.
	res = run(args(map[string]any{"ca": tls["ca"]}))
	assert.Equal(t, true, res["restart_needed"])
	assert.FileExists(t, filepath.Join(dir, "ca.crt"))
	assert.NoFileExists(t, filepath.Join(dir, "client.crt"))
	assert.NoFileExists(t, filepath.Join(dir, "client.key"))

	res = run(map[string]any{"path": path, "state": "absent"})
	assert.Equal(t, true, res["changed"])
	assert.NoFileExists(t, path)
	assert.NoDirExists(t, filepath.Dir(dir), "the TLS directory goes with the file")
}

func TestRegistriesRedactAnyStyle(t *testing.T) {
	const secret = "s3cr3t-Value"
	after := "configs:\n  r.example:\n    auth:\n      username: u\n      password: " + secret + "\n"
	for name, tc := range map[string]struct{ before, want string }{
		"flow style": {"configs: {r.example: {auth: {username: u, password: " + secret + "}}}\n",
			"configs: {r.example: {auth: {username: u, password: \"<redacted>\"}}}\n"},
		"JSON": {`{"configs": {"r.example": {"auth": {"username": "u", "password": "` + secret + `"}}}}`,
			"{\"configs\": {\"r.example\": {\"auth\": {\"username\": \"u\", \"password\": \"<redacted>\"}}}}\n"},
		"on the line after": {"configs:\n  r.example:\n    auth:\n      username: u\n      password:\n        " + secret + "\n",
			"configs:\n  r.example:\n    auth:\n      username: u\n      password: \"<redacted>\"\n"},
		"does not parse": {"configs:\n  r.example: {auth: {password: " + secret + "\n", "<not shown: does not parse>"},
	} {
		t.Run(name, func(t *testing.T) {
			b, a := redactPairWith(registriesRedactor, tc.before, after)
			assert.Equal(t, tc.want, b)
			assert.NotContains(t, b+a, secret)
			assert.Equal(t, "configs:\n  r.example:\n    auth:\n      username: u\n      password: <redacted>\n", a, "the same password: not changed")
		})
	}
}
