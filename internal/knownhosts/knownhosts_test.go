package knownhosts

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func TestGitHubKnownHosts(t *testing.T) {
	got, warnings, err := GitHub("")
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
	got, warnings, err := GitHub(writeMeta(t, good))
	require.NoError(t, err)
	assert.Equal(t, "github.com "+k[0].Type+" "+k[0].Blob+"\ngithub.com "+k[1].Type+" "+k[1].Blob+"\n"+
		"[ssh.github.com]:443 "+k[0].Type+" "+k[0].Blob+"\n[ssh.github.com]:443 "+k[1].Type+" "+k[1].Blob+"\n", got, "sorted ecdsa first; rsa left out")
	assert.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "no fingerprint for its ssh-rsa key")

	tampered := `{"ssh_key_fingerprints":{"SHA256_ED25519":"` + k[0].Fingerprint + `"},"ssh_keys":["` + k[1].Type + " " + k[1].Blob + `"]}`
	_, _, err = GitHub(writeMeta(t, tampered))
	assert.ErrorContains(t, err, "but GitHub publishes SHA256:"+k[0].Fingerprint)

	const oldRSA = "AAAAB3NzaC1yc2EAAAABIwAAAQEAq2A7hRGmdnm9tUDbO9IDSwBK6TbQa+PXYPCPy6rbTrTtw7PHkccKrpp0yVhp5HdEIcKr6pLlVDBfOLX9QUsyCOV0wzfjIJNlGEYsdlLJizHhbn2mUjvSAHQqZETYP81eFzLQNnPHt4EVVUh7VfDESU84KezmD5QlWpXLmvU31/yMf+Se8xhHTvKSCZIFImWwoG6mbUoWf9nzpIoaSjB+weqqUUmpaaasXVal72J+UX2B+2RPW3RcT0eOzQgqlJL3RKrTJvdsjE3JEAvGq3lGHSZXy28G3skua2SmVi/w4yCE6gbODqnTWlg7+wC604ydGXA8VJiS5ap43JXiUFFAaQ=="
	retired := `{"ssh_key_fingerprints":{"SHA256_RSA":"nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"},"ssh_keys":["ssh-rsa ` + oldRSA + `"]}`
	_, _, err = GitHub(writeMeta(t, retired))
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
	_, _, err = GitHub(writeMeta(t, foreign))
	assert.ErrorContains(t, err, "is not one the collection pins")

	_, _, err = GitHub(writeMeta(t, "not json"))
	assert.ErrorContains(t, err, "is not GitHub's meta API JSON")
}

func TestCustomKnownHosts(t *testing.T) {
	got, err := Check("# comment\n[127.0.0.1]:2222 " + githubHostKeys[1].Type + " " + githubHostKeys[1].Blob)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(got, "\n"))
	_, err = Check("github.com ssh-ed25519 not-base64!!")
	assert.ErrorContains(t, err, "known_hosts line 1 is not an OpenSSH known_hosts entry")
	_, err = Check("# only comments\n")
	assert.ErrorContains(t, err, "holds no host key")
}
