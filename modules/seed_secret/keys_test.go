package seedsecret

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"os"
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

func TestGitHubKnownHosts(t *testing.T) {
	got, warnings, err := githubKnownHosts("")
	require.NoError(t, err)
	assert.Empty(t, warnings)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	require.Len(t, lines, 6, "one key per line, for github.com and for ssh.github.com on port 443")
	assert.True(t, strings.HasPrefix(lines[0], "github.com ecdsa-sha2-nistp256 "), "ecdsa first")
	assert.True(t, strings.HasPrefix(lines[1], "github.com ssh-ed25519 "))
	assert.True(t, strings.HasPrefix(lines[2], "github.com ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQCj7ndN"), "the current RSA key")
	assert.True(t, strings.HasPrefix(lines[3], "[ssh.github.com]:443 ecdsa-sha2-nistp256 "))
	for i, l := range lines {
		_, hosts, _, _, _, err := ssh.ParseKnownHosts([]byte(l))
		require.NoError(t, err)
		assert.Equal(t, []string{GitHubHosts[i/3]}, hosts)
	}
}

func writeMeta(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "meta.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestGitHubMetaFile(t *testing.T) {
	k := githubHostKeys
	good := `{"ssh_key_fingerprints":{"SHA256_ECDSA":"` + k[0].Fingerprint + `","SHA256_ED25519":"` + k[1].Fingerprint + `"},
	  "ssh_keys":["` + k[1].Type + " " + k[1].Blob + `","` + k[0].Type + " " + k[0].Blob + `","ssh-rsa ` + k[2].Blob + `"]}`
	got, warnings, err := githubKnownHosts(writeMeta(t, good))
	require.NoError(t, err)
	assert.Equal(t, "github.com "+k[0].Type+" "+k[0].Blob+"\ngithub.com "+k[1].Type+" "+k[1].Blob+"\n"+
		"[ssh.github.com]:443 "+k[0].Type+" "+k[0].Blob+"\n[ssh.github.com]:443 "+k[1].Type+" "+k[1].Blob+"\n", got, "sorted ecdsa first; rsa left out")
	assert.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "no fingerprint for its ssh-rsa key")

	tampered := `{"ssh_key_fingerprints":{"SHA256_ED25519":"` + k[0].Fingerprint + `"},"ssh_keys":["` + k[1].Type + " " + k[1].Blob + `"]}`
	_, _, err = githubKnownHosts(writeMeta(t, tampered))
	assert.ErrorContains(t, err, "but GitHub publishes SHA256:"+k[0].Fingerprint)

	const oldRSA = "AAAAB3NzaC1yc2EAAAABIwAAAQEAq2A7hRGmdnm9tUDbO9IDSwBK6TbQa+PXYPCPy6rbTrTtw7PHkccKrpp0yVhp5HdEIcKr6pLlVDBfOLX9QUsyCOV0wzfjIJNlGEYsdlLJizHhbn2mUjvSAHQqZETYP81eFzLQNnPHt4EVVUh7VfDESU84KezmD5QlWpXLmvU31/yMf+Se8xhHTvKSCZIFImWwoG6mbUoWf9nzpIoaSjB+weqqUUmpaaasXVal72J+UX2B+2RPW3RcT0eOzQgqlJL3RKrTJvdsjE3JEAvGq3lGHSZXy28G3skua2SmVi/w4yCE6gbODqnTWlg7+wC604ydGXA8VJiS5ap43JXiUFFAaQ=="
	retired := `{"ssh_key_fingerprints":{"SHA256_RSA":"nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"},"ssh_keys":["ssh-rsa ` + oldRSA + `"]}`
	_, _, err = githubKnownHosts(writeMeta(t, retired))
	assert.ErrorContains(t, err, "retired on 2023-03-24")

	// A self-consistent file with a key the collection does not pin: a
	// tampered file cannot bring its own key in.
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	blob := base64.StdEncoding.EncodeToString(sshPub.Marshal())
	fp, err := fingerprintOf(blob)
	require.NoError(t, err)
	foreign := `{"ssh_key_fingerprints":{"SHA256_ED25519":"SHA256:` + fp + `"},"ssh_keys":["ssh-ed25519 ` + blob + `"]}`
	_, _, err = githubKnownHosts(writeMeta(t, foreign))
	assert.ErrorContains(t, err, "is not one the collection pins")

	_, _, err = githubKnownHosts(writeMeta(t, "not json"))
	assert.ErrorContains(t, err, "is not GitHub's meta API JSON")
}

func TestCustomKnownHosts(t *testing.T) {
	got, err := checkKnownHosts("# comment\n[127.0.0.1]:2222 " + githubHostKeys[1].Type + " " + githubHostKeys[1].Blob)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(got, "\n"))
	_, err = checkKnownHosts("github.com ssh-ed25519 not-base64!!")
	assert.ErrorContains(t, err, "known_hosts line 1 is not an OpenSSH known_hosts entry")
	_, err = checkKnownHosts("# only comments\n")
	assert.ErrorContains(t, err, "holds no host key")
}

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

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, module)
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
