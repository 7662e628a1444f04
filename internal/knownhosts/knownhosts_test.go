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

// TestPinnedForges: each forge's known_hosts holds its keys for its hosts
// only, each key's SHA256 fingerprint (computed by x/crypto/ssh) the one
// its page publishes, typed here again from the page, so that a key and
// its pinned fingerprint edited together still fail.
func TestPinnedForges(t *testing.T) {
	for _, tc := range []struct {
		name         string
		hosts        []string
		fingerprints []string // ecdsa, ed25519, rsa
	}{
		// https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/githubs-ssh-key-fingerprints
		{"github", []string{"github.com", "[ssh.github.com]:443"}, []string{
			"p2QAMXNIC1TJYWeIOttrVc98/R1BUFWu3/LiyKgUfQM", "+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU", "uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"}},
		// https://docs.gitlab.com/user/gitlab_com/#ssh-host-keys-fingerprints
		{"gitlab", []string{"gitlab.com"}, []string{
			"HbW3g8zUjNSksFbqTiUWPWg2Bq1x8xdGUrliXFzSnUw", "eUXGGm1YGsMAS7vkcx6JOJdOGHPem5gQp4taiCfCLB8", "ROQFvPThGrW4RuWLoL9tq9I9zJ42fK4XywyRtbOz/EQ"}},
		// https://docs.codeberg.org/security/ssh-fingerprint/
		{"codeberg", []string{"codeberg.org"}, []string{
			"T9FYDEHELhVkulEKKwge5aVhVTbqCW0MIRwAfpARs/E", "mIlxA9k46MmM6qdJOdMnAQpzGxF4WIVVL+fj+wZbw0g", "6QQmYi4ppFS4/+zSZ5S4IU+4sa6rwvQ4PbhCtPEBekQ"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts, ok := Hosts(tc.name)
			require.True(t, ok)
			assert.Equal(t, tc.hosts, hosts)
			text, err := Pinned(tc.name)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(text), "\n")
			require.Len(t, lines, 3*len(tc.hosts))
			for i, l := range lines {
				_, hosts, key, _, _, err := ssh.ParseKnownHosts([]byte(l))
				require.NoError(t, err)
				assert.Equal(t, []string{tc.hosts[i/3]}, hosts)
				assert.Equal(t, "SHA256:"+tc.fingerprints[i%3], ssh.FingerprintSHA256(key), l)
			}
		})
	}
	_, ok := Hosts("bitbucket")
	assert.False(t, ok)
	_, err := Pinned("bitbucket")
	assert.ErrorContains(t, err, `"bitbucket" is not a forge whose host keys the collection pins (github, gitlab, codeberg)`)
}

// TestForgeRefusesAnotherForgesKey: a key under the wrong forge, or with
// another's fingerprint, is refused naming both.
func TestForgeRefusesAnotherForgesKey(t *testing.T) {
	gitlab, codeberg := forges["gitlab"], forges["codeberg"]
	_, err := gitlab.render([]hostKey{{codeberg.keys[1].Type, codeberg.keys[1].Blob, gitlab.keys[1].Fingerprint}})
	assert.ErrorContains(t, err, "GitLab ssh-ed25519 host key has fingerprint SHA256:"+codeberg.keys[1].Fingerprint+", but GitLab publishes SHA256:"+gitlab.keys[1].Fingerprint)
	_, err = gitlab.render([]hostKey{codeberg.keys[1]})
	assert.ErrorContains(t, err, "GitLab ssh-ed25519 host key SHA256:"+codeberg.keys[1].Fingerprint+" is not one the collection pins")
}
