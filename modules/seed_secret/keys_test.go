package seedsecret

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

func newDeployKey(t *testing.T, passphrase string) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte(passphrase))
	}
	require.NoError(t, err)
	return string(pem.EncodeToMemory(block))
}

func TestDeployKeyData(t *testing.T) {
	key := newDeployKey(t, "")
	data, err := deployKeyData(key, "kh\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"identity", "identity.pub", "known_hosts"}, sortedKeys(data))
	assert.True(t, strings.HasPrefix(string(data["identity.pub"]), "ssh-ed25519 "))
	signer, err := ssh.ParsePrivateKey(data["identity"])
	require.NoError(t, err)
	assert.Equal(t, string(ssh.MarshalAuthorizedKey(signer.PublicKey())), string(data["identity.pub"]), "identity.pub is derived from identity")

	_, err = deployKeyData(newDeployKey(t, "secret"), "kh\n")
	assert.ErrorContains(t, err, "protected by a passphrase")
	_, err = deployKeyData("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n", "kh\n")
	assert.ErrorContains(t, err, "is not an SSH private key")
}

func TestAgeKeyData(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	text := "# created: 2026-12-02\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	data, err := ageKeyData(text)
	require.NoError(t, err)
	assert.Equal(t, text, string(data["age.agekey"]))

	_, err = ageKeyData("AGE-SECRET-KEY-1NOTAREALKEY")
	assert.ErrorContains(t, err, "age_key is not an age identity")
	assert.NotContains(t, err.Error(), "NOTAREALKEY")
	_, err = ageKeyData(newDeployKey(t, ""))
	assert.ErrorContains(t, err, "age_key is not an age identity")
}

func TestSameData(t *testing.T) {
	cur := map[string][]byte{"a": []byte("1"), "other": []byte("x")}
	assert.True(t, sameData(cur, map[string][]byte{"a": []byte("1")}, map[string]bool{"a": true}), "keys of other managers do not count")
	assert.False(t, sameData(cur, map[string][]byte{"a": []byte("2")}, nil))
	assert.False(t, sameData(cur, map[string][]byte{"a": []byte("1")}, map[string]bool{"a": true, "gone": true}), "a key we applied before must go")
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestCheckModeWithoutACluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "not-fetched-yet", "kubeconfig")
	secret := "first-run-secret-5c1e77"
	base := func(state string) map[string]any {
		return map[string]any{"kubeconfig": kubeconfig, "state": state, "namespaces": []any{"flux-system", "apps"},
			"secrets":             []any{map[string]any{"name": "infisical-universal-auth", "namespace": "apps", "string_data": map[string]any{"clientId": "apps", "clientSecret": secret}}},
			"_ansible_check_mode": true, "_ansible_diff": true}
	}
	res, code, out := ansibletest.Run(t, module, kube.With(run, kube.Connect), base("present"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.NotContains(t, out, secret)
	assert.Contains(t, res["warnings"].([]any)[0], "kubeconfig "+kubeconfig+" does not exist yet")
	diffs := res["diff"].([]any)
	require.Len(t, diffs, 3, "two namespaces and the Secret")
	assert.Equal(t, "namespace: flux-system\n", diffs[0].(map[string]any)["after"])
	assert.Contains(t, diffs[2].(map[string]any)["after"], "clientSecret: <redacted>")
	secrets := res["secrets"].([]any)
	assert.Equal(t, []any{"clientId", "clientSecret"}, secrets[0].(map[string]any)["keys"])

	res, code, _ = ansibletest.Run(t, module, kube.With(run, kube.Connect), base("absent"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"], "the namespaces would still be created")
	assert.Equal(t, false, res["secrets"].([]any)[0].(map[string]any)["changed"], "nothing to delete in a new cluster")
}
