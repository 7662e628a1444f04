package k3sconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
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
			"ghcr.io": map[string]any{"auth": map[string]any{"token": testRegistryToken}},
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
			"ghcr.io": map[string]any{"auth": map[string]any{"token": testRegistryToken}},
		},
	}, doc)
	ansibletest.Golden(t, "testdata/registries.yaml", content)

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
	assert.Contains(t, diff["after"], "token: <redacted>\n", "the unchanged token is not marked changed")
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
		{"bad rewrite", map[string]any{"mirrors": map[string]any{"docker.io": map[string]any{"rewrite": map[string]any{"(": "x"}}}},
			`mirrors.docker.io.rewrite: "(" is not a regular expression`},
		{"password not a string", map[string]any{"configs": map[string]any{"r.example": map[string]any{"auth": map[string]any{"password": 12345}}}},
			`configs.r.example.auth.password: expected a string, got a number`},
		{"relative tls file", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"ca_file": "ca.pem"}}}},
			`configs.r.example.tls.ca_file: expected an absolute path on the node, got ca.pem`},
		{"cert without key", map[string]any{"configs": map[string]any{"r.example": map[string]any{"tls": map[string]any{"cert_file": "/c.pem"}}}},
			`configs.r.example.tls: cert_file and key_file go together`},
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
	b, a := redactPairWith(redactRegistries, before, after)
	assert.Equal(t, "# mine\nconfigs:\n  r.example:\n    auth:\n      password: <redacted>\n      auth: <redacted>\n  other:\n    auth:\n      password: <redacted>\n", b)
	assert.Equal(t, "configs:\n  r.example:\n    auth:\n      password: <redacted, changed>\n      auth: <redacted>\n  other:\n    auth:\n      password: <redacted>\n", a)
}
