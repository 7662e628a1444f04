package k3snodemodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// fakeEncryption stands in for k3s's secrets encryption
// (pkg/server/handlers/secrets-encrypt.go) on this server and on its lead
// (any other address): the status as encryptionStatus answers it, enable
// writing the identity provider alone (WriteIdentityConfig), rotate-keys
// refused unless every server is at start or reencrypt_finished with the
// same hash, then a new key and reencrypt_finished, and a restart taking
// the lead's config from the datastore (the bootstrap reconcile).
type fakeEncryption struct {
	file string // this server's encryption-config.json
	// This server's and the lead's config ("": none, "identity", "on") and
	// active key; hashMatch says every server's annotation is the same.
	local, lead       string
	localKey, leadKey string
	stage             string
	hashMatch         bool
	rotations         int
	followers         bool // other servers, behind after a rotation until they restart
	missingAnnotation int  // status requests answered 500 first
}

func (e *fakeEncryption) status(local bool) (int, string, error) {
	if e.missingAnnotation > 0 {
		// k3s just started: its agent has not set the Node's annotation yet.
		e.missingAnnotation--
		return http.StatusInternalServerError, "secret-encrypt error ID 1234", nil
	}
	config, key := e.lead, e.leadKey
	if local {
		config, key = e.local, e.localKey
	}
	s := k3snode.EncryptionStatus{Stage: e.stage, ActiveKey: key, HashMatch: e.hashMatch}
	if !e.hashMatch {
		s.HashError = "hash does not match between node1 and node2"
	}
	switch config {
	case "identity":
		s.Enable = new(bool)
	case "on":
		on := true
		s.Enable = &on
	}
	raw, _ := json.Marshal(s)
	return http.StatusOK, string(raw), nil
}

func (e *fakeEncryption) change(body []byte) (int, string, error) {
	var req struct {
		Stage  *string `json:"stage"`
		Enable *bool   `json:"enable"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, "bad request", nil
	}
	switch {
	case req.Enable != nil && *req.Enable && e.local == "":
		e.local, e.lead, e.stage = "identity", "identity", k3snode.StageStart
		return http.StatusOK, "", e.write(`{"resources":[{"providers":[{"identity":{}}]}]}`)
	case req.Stage != nil && *req.Stage == "rotate_keys":
		if (e.stage != k3snode.StageStart && e.stage != k3snode.StageReencryptFinished) || !e.hashMatch || e.local == "" {
			return http.StatusBadRequest, "secret-encrypt error ID 4242", nil
		}
		e.rotations++
		key := "AES-CBC aescbckey-" + strings.Repeat("7", e.rotations)
		e.local, e.lead, e.localKey, e.leadKey, e.stage = "on", "on", key, key, k3snode.StageReencryptFinished
		// The other servers' annotations are the old hash until they restart.
		e.hashMatch = !e.followers
		return http.StatusOK, "", e.write(`{"resources":[{"providers":[{"aescbc":{"keys":[{"name":"k","secret":"c2VjcmV0LWtleS1tYXRlcmlhbA=="}]}},{"identity":{}}]}]}`)
	}
	return http.StatusBadRequest, "secret-encrypt error ID 4343", nil
}

// started is k3s starting: it takes the datastore's encryption config, the
// lead's.
func (e *fakeEncryption) started() {
	if e.lead != "" {
		e.local, e.localKey = e.lead, e.leadKey
		e.hashMatch = true
	}
}

func (e *fakeEncryption) write(content string) error {
	if err := os.MkdirAll(filepath.Dir(e.file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(e.file, []byte(content), 0o600)
}

func TestDecideEncryption(t *testing.T) {
	server := args{Role: "server", DataDir: "/var/lib/rancher/k3s"}
	enable, follow, keys := server, server, server
	enable.SecretsEncryption, follow.SecretsEncryption, follow.RotatedOn, keys.EncryptionKeys = "enable", "follow", "https://10.0.0.1:6443", "ensure"
	running := encryptionFacts{Wanted: true, Local: k3snode.EncryptionNoConfig, Bootstrapped: true, Active: true}
	with := func(f encryptionFacts, change func(*encryptionFacts)) encryptionFacts { change(&f); return f }
	for _, tc := range []struct {
		name        string
		a           args
		f           encryptionFacts
		want        encryptionWork
		wantWarning string
		err         string
	}{
		{name: "nothing asked, nothing there", a: server, f: encryptionFacts{Bootstrapped: true, Active: true}},
		{name: "a new server", a: enable, f: encryptionFacts{Wanted: true}},
		{name: "enable on a running cluster", a: enable, f: running, want: encryptionWork{Enable: true}},
		{name: "enabled already", a: enable, f: with(running, func(f *encryptionFacts) { f.Local = k3snode.EncryptionIdentityOnly })},
		{name: "on already", a: enable, f: with(running, func(f *encryptionFacts) { f.Local = k3snode.EncryptionOn })},
		{name: "enable where k3s does not run", a: enable, f: with(running, func(f *encryptionFacts) { f.Active = false }),
			err: "secrets_encryption is enable: k3s is not running on this server"},
		{name: "follow", a: follow, f: running, want: encryptionWork{CheckLead: true, Lead: "https://10.0.0.1:6443"}},
		{name: "follow without the lead", a: func() args { a := follow; a.RotatedOn = ""; return a }(), f: running,
			err: "rotated_on (or k3s_config.server) must name the server that leads the encryption"},
		{name: "the flag alone on a running cluster: k3s's own way, warned", a: server, f: running,
			wantWarning: "each would make its own (k3s issue 7195)"},
		{name: "encrypted, and the config turns it off", a: server, f: with(running, func(f *encryptionFacts) { f.Wanted, f.Local = false, k3snode.EncryptionOn }),
			err: "k3s_config's config does not turn secrets-encryption on, and this server's Secrets are encrypted (/var/lib/rancher/k3s/server/cred/encryption-config.json has a key)"},
		{name: "asked without the flag", a: keys, f: with(running, func(f *encryptionFacts) { f.Wanted = false }),
			err: "need k3s_config's config to set secrets-encryption: true"},
		{name: "disabled by hand", a: enable, f: with(running, func(f *encryptionFacts) { f.Local = k3snode.EncryptionDisabled }),
			err: "secrets encryption was turned off on this server (k3s secrets-encrypt disable"},
		{name: "an agent", a: args{Role: "agent", SecretsEncryption: "enable"}, f: running, err: "an agent holds no Secrets"},
		{name: "keys", a: keys, f: with(running, func(f *encryptionFacts) { f.Local = k3snode.EncryptionIdentityOnly }), want: encryptionWork{Keys: "ensure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decideEncryption(tc.a, tc.f)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			if tc.wantWarning != "" {
				assert.Contains(t, got.Warning, tc.wantWarning)
				got.Warning = ""
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestKeysWork(t *testing.T) {
	on, off := true, false
	identity := k3snode.EncryptionStatus{Stage: k3snode.StageStart, Enable: &off, HashMatch: true}
	rotated := k3snode.EncryptionStatus{Stage: k3snode.StageReencryptFinished, ActiveKey: "AES-CBC aescbckey-2026", Enable: &on, HashMatch: true}
	behind := k3snode.EncryptionStatus{Stage: k3snode.StageStart, ActiveKey: "AES-CBC aescbckey", Enable: &on, HashError: "hash does not match between node1 and node2"}
	for _, tc := range []struct {
		name        string
		keys        string
		local, lead k3snode.EncryptionStatus
		checkMode   bool
		want        string
		err         string
	}{
		{name: "ensure in check mode, enabled earlier in the run", keys: "ensure", local: k3snode.EncryptionStatus{}, checkMode: true, want: "rotate"},
		{name: "ensure: the first key", keys: "ensure", local: identity, want: "rotate"},
		{name: "ensure: a key there", keys: "ensure", local: rotated},
		{name: "rotate: again", keys: "rotate", local: rotated, want: "rotate"},
		{name: "rotate before enable", keys: "rotate", local: k3snode.EncryptionStatus{}, err: "this server has no encryption config yet"},
		{name: "rotate with a server behind", keys: "rotate", local: behind, err: "the servers' encryption configs differ (k3s: hash does not match between node1 and node2): restart the others first"},
		{name: "ensure: a key there, a server behind", keys: "ensure", local: behind},
		{name: "follow: another key", keys: "follow", local: behind, lead: rotated, want: "restart"},
		{name: "follow: the same key", keys: "follow", local: rotated, lead: rotated},
		{name: "follow: the lead has none", keys: "follow", local: identity, lead: identity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keysWork(tc.keys, tc.local, tc.lead, tc.checkMode)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), "nothing was changed")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// encryptionServer is tokenServer with k3s's secrets encryption standing in.
func encryptionServer(t *testing.T) (*fakeNode, k3snode.Paths, string) {
	t.Helper()
	f, where, configPath := tokenServer(t)
	f.enc = &fakeEncryption{file: k3snode.EncryptionConfigFile(where), hashMatch: true}
	return f, where, configPath
}

func encryptionArgs(configPath string, kv ...any) map[string]any {
	return with(map[string]any{"role": "server", "k3s_config": map[string]any{"path": configPath, "role": "server", "token": oldSecret,
		"config": map[string]any{"secrets-encryption": true}}}, kv...)
}

func TestEncryptionOnARunningCluster(t *testing.T) {
	f, where, configPath := encryptionServer(t)
	before := mustRead(t, configPath)

	// Check mode asks nothing and writes nothing.
	res, code := runOn(t, f, where, encryptionArgs(configPath, "secrets_encryption", "enable", "_ansible_check_mode", true, "_ansible_diff", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["encryption_enabled"])
	assert.Contains(t, res["actions"], "enable secrets encryption on this server (PUT /v1-k3s/encrypt/config, as k3s secrets-encrypt enable does)")
	assert.Empty(t, f.changes())
	assert.Equal(t, before, mustRead(t, configPath))
	assert.NoFileExists(t, f.enc.file)

	res, code = runOn(t, f, where, encryptionArgs(configPath, "secrets_encryption", "enable"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, []string{"PUT https://127.0.0.1:6443/v1-k3s/encrypt/config", "systemctl restart --no-block k3s.service"}, f.changes(),
		"enabled through k3s's own supervisor before the config, then restarted with it")
	assert.Contains(t, mustRead(t, configPath), "secrets-encryption: true")
	state, err := k3snode.ReadEncryptionConfig(where)
	require.NoError(t, err)
	assert.Equal(t, k3snode.EncryptionIdentityOnly, state)
	assert.NotContains(t, fmt.Sprint(res), oldSecret)

	f.commands = nil
	res, code = runOn(t, f, where, encryptionArgs(configPath, "secrets_encryption", "enable"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "enabled already")
	assert.Equal(t, false, res["encryption_enabled"])
	assert.Empty(t, f.changes())

	// The first key, once every server runs with it.
	res, code = runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "ensure", "_ansible_check_mode", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["encryption_keys_rotated"])
	assert.Equal(t, []string{"GET https://127.0.0.1:6443/v1-k3s/encrypt/status"}, f.changes(), "check mode only reads")
	f.commands = nil
	res, code = runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "ensure"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["encryption_keys_rotated"])
	assert.Equal(t, "AES-CBC aescbckey-7", res["encryption_key"])
	assert.Equal(t, []string{"GET https://127.0.0.1:6443/v1-k3s/encrypt/status", "PUT https://127.0.0.1:6443/v1-k3s/encrypt/config", "GET https://127.0.0.1:6443/v1-k3s/encrypt/status"}, f.changes())
	assert.NotContains(t, fmt.Sprint(res), "c2VjcmV0LWtleS1tYXRlcmlhbA==", "never a key")

	f.commands = nil
	res, code = runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "ensure"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "a key there")
	assert.Equal(t, "AES-CBC aescbckey-7", res["encryption_key"])

	// rotate: a new key each run.
	res, code = runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "rotate"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, "AES-CBC aescbckey-77", res["encryption_key"])
}

func TestEncryptionKeysFollow(t *testing.T) {
	f, where, configPath := encryptionServer(t)
	require.NoError(t, f.enc.write(`{"resources":[{"providers":[{"aescbc":{"keys":[]}},{"identity":{}}]}]}`))
	f.enc.local, f.enc.lead, f.enc.localKey, f.enc.leadKey = "on", "on", "AES-CBC aescbckey-1", "AES-CBC aescbckey-1"
	f.enc.stage = k3snode.StageReencryptFinished
	res, code := runOn(t, f, where, encryptionArgs(configPath, "secrets_encryption", "follow", "rotated_on", "https://10.0.0.1:6443"))
	require.Equal(t, 0, code, res["msg"])
	// The lead rotated the keys since.
	f.enc.leadKey, f.enc.hashMatch = "AES-CBC aescbckey-2", false
	f.commands = nil
	follow := encryptionArgs(configPath, "encryption_keys", "follow", "rotated_on", "https://10.0.0.1:6443")

	res, code = runOn(t, f, where, with(follow, "_ansible_check_mode", true, "_ansible_diff", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Contains(t, fmt.Sprint(res["diff"]), "(restarted for the cluster's new secrets encryption key, made on https://10.0.0.1:6443)")
	assert.Equal(t, []string{"GET https://127.0.0.1:6443/v1-k3s/encrypt/status", "GET https://10.0.0.1:6443/v1-k3s/encrypt/status"}, f.changes())

	f.commands = nil
	res, code = runOn(t, f, where, follow)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "AES-CBC aescbckey-2", res["encryption_key"])
	assert.Equal(t, []string{"GET https://127.0.0.1:6443/v1-k3s/encrypt/status", "GET https://10.0.0.1:6443/v1-k3s/encrypt/status",
		"systemctl restart --no-block k3s.service", "GET https://127.0.0.1:6443/v1-k3s/encrypt/status"}, f.changes())

	f.commands = nil
	res, code = runOn(t, f, where, follow)
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "the lead's key already")
}

func TestEncryptionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(e *fakeEncryption)
		args  func(configPath string) map[string]any
		err   string
	}{
		{name: "the flag dropped where Secrets are encrypted",
			setup: func(e *fakeEncryption) {
				e.local = "on"
				_ = e.write(`{"resources":[{"providers":[{"aescbc":{"keys":[]}},{"identity":{}}]}]}`)
			},
			args: func(configPath string) map[string]any {
				return map[string]any{"role": "server", "k3s_config": map[string]any{"path": configPath, "role": "server", "token": oldSecret}}
			},
			err: "this server's Secrets are encrypted"},
		{name: "follow a lead that has not enabled it",
			args: func(configPath string) map[string]any {
				return encryptionArgs(configPath, "secrets_encryption", "follow", "rotated_on", "https://10.0.0.1:6443")
			},
			err: "secrets_encryption is follow: https://10.0.0.1:6443 has not enabled secrets encryption"},
		{name: "rotate before any encryption config",
			args: func(configPath string) map[string]any { return encryptionArgs(configPath, "encryption_keys", "rotate") },
			err:  "this server has no encryption config yet"},
		{name: "k3s refuses the rotation",
			setup: func(e *fakeEncryption) {
				e.local, e.lead, e.stage = "identity", "identity", k3snode.StagePrepare
				_ = e.write(`{"resources":[{"providers":[{"identity":{}}]}]}`)
			},
			args: func(configPath string) map[string]any { return encryptionArgs(configPath, "encryption_keys", "rotate") },
			err:  `stage "prepare" of a key rotation by hand`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, where, configPath := encryptionServer(t)
			if tc.setup != nil {
				tc.setup(f.enc)
			}
			before := mustRead(t, configPath)
			res, code := runOn(t, f, where, tc.args(configPath))
			require.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.err)
			assert.NotContains(t, fmt.Sprint(res), oldSecret)
			assert.Equal(t, before, mustRead(t, configPath), "nothing written")
			for _, c := range f.changes() {
				assert.True(t, strings.HasPrefix(c, "GET "), "only reads: %s", c)
			}
		})
	}
}

// A k3s that has just started answers its status with 500 until its Node
// has the encryption hash annotation: asked again within wait_timeout.
func TestEncryptionStatusOfAStartingK3s(t *testing.T) {
	f, where, configPath := encryptionServer(t)
	require.NoError(t, f.enc.write(`{"resources":[{"providers":[{"identity":{}}]}]}`))
	f.enc.local, f.enc.lead, f.enc.stage = "identity", "identity", k3snode.StageStart
	f.enc.missingAnnotation = 2
	res, code := runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "ensure", "_ansible_check_mode", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["encryption_keys_rotated"])
	assert.Len(t, f.changes(), 3, "asked three times")

	f.enc.missingAnnotation = 100
	res, code = runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "ensure", "wait_timeout", 2))
	require.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "read the secrets encryption status of https://127.0.0.1:6443: k3s answered 500: secret-encrypt error ID 1234")
}

// Before k3s ever ran (a check run on bare hosts), ensure and follow have
// nothing to do: k3s makes the key as it starts; rotate is refused.
func TestEncryptionKeysBeforeK3s(t *testing.T) {
	where := testPaths(t)
	f := newFakeNode()
	f.enc = &fakeEncryption{file: k3snode.EncryptionConfigFile(where)}
	configPath := filepath.Join(t.TempDir(), "config.yaml")
	for _, keys := range []string{"ensure", "follow"} {
		res, code := runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", keys, "rotated_on", "https://10.0.0.1:6443", "_ansible_check_mode", true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["encryption_keys_rotated"], keys)
	}
	res, code := runOn(t, f, where, encryptionArgs(configPath, "encryption_keys", "rotate", "_ansible_check_mode", true))
	require.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "encryption_keys is rotate: k3s is not running on this server")
}
