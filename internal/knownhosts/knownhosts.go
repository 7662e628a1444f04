// Package knownhosts is the SSH host keys the collection trusts: GitHub's,
// pinned with their published fingerprints, and a user's known_hosts text
// checked line by line. seed_secret writes them into Flux's Secrets;
// flux_repo_check reads which hosts they are for.
package knownhosts

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
)

// GitHubHosts are the names the known_hosts lines are for: GitHub's SSH
// endpoint, and the one on port 443 for networks that block port 22
// (same keys).
var GitHubHosts = []string{"github.com", "[ssh.github.com]:443"}

// hostKey is one published SSH host key and its published fingerprint
// (base64 SHA256 without padding, as GitHub's meta API gives it).
type hostKey struct {
	Type, Blob, Fingerprint string
}

// githubHostKeys are GitHub's SSH host keys and fingerprints as published
// on docs.github.com ("GitHub's SSH key fingerprints") and by
// https://api.github.com/meta, ecdsa first. Every use checks each key
// against its fingerprint, so a mistyped key cannot go unnoticed.
var githubHostKeys = []hostKey{
	{"ecdsa-sha2-nistp256", "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=", "p2QAMXNIC1TJYWeIOttrVc98/R1BUFWu3/LiyKgUfQM"},
	{"ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", "+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU"},
	{"ssh-rsa", "AAAAB3NzaC1yc2EAAAADAQABAAABgQCj7ndNxQowgcQnjshcLrqPEiiphnt+VTTvDP6mHBL9j1aNUkY4Ue1gvwnGLVlOhGeYrnZaMgRK6+PKCUXaDbC7qtbW8gIkhL7aGCsOr/C56SJMy/BCZfxd1nWzAOxSDPgVsmerOBYfNqltV9/hWCqBywINIR+5dIg6JTJ72pcEpEjcYgXkE2YEFXV1JHnsKgbLWNlhScqb2UmyRkQyytRLtL+38TGxkxCflmO+5Z8CSSNY7GidjMIZ7Q4zMjA2n1nGrlTDkzwDCsw+wqFPGQA179cnfGWOWRVruj16z6XyvxvjJwbz0wQZ75XK5tKSb7FNyeIEs4TT4jk+S4dhPeAUC5y+bDYirYgM4GC7uEnztnZyaVWQ7B381AK4Qdrwt51ZqExKbQpTUNn+EjqoTwvqNj4kqx5QUCI0ThS/YkOxJCXmPUWZbhjpCg56i+2aB6CmK2JGhn57K5mj0MNdBXA4/WnwH6XoPWJzK5Nyu2zB3nAZp+S5hpQs+p1vN1/wsjk=", "uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"},
}

// retiredGitHubRSA is the RSA host key GitHub replaced on 2023-03-24
// after it was exposed; it must never be trusted again.
const retiredGitHubRSA = "nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"

// keyOrder puts ecdsa first, then ed25519, then rsa.
var keyOrder = map[string]int{"ecdsa-sha2-nistp256": 0, "ssh-ed25519": 1, "ssh-rsa": 2}

// metaFingerprintField names the meta API field for each key type.
var metaFingerprintField = map[string]string{
	"ecdsa-sha2-nistp256": "SHA256_ECDSA", "ssh-ed25519": "SHA256_ED25519", "ssh-rsa": "SHA256_RSA",
}

// fingerprintOf is the SHA256 fingerprint of a base64 key blob, as
// ssh-keygen -l prints it without the "SHA256:" prefix.
func fingerprintOf(blob string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(blob)
	if err != nil {
		return "", fmt.Errorf("key is not base64: %w", err)
	}
	sum := sha256.Sum256(raw)
	return base64.RawStdEncoding.EncodeToString(sum[:]), nil
}

// GitHub renders known_hosts for github.com from the built-in
// keys, or from a saved copy of GitHub's meta API answer, checking every
// key against its published fingerprint. Warnings name keys left out.
func GitHub(metaFile string) (string, []string, error) {
	keys := githubHostKeys
	var warnings []string
	if metaFile != "" {
		var err error
		if keys, warnings, err = keysFromMeta(metaFile); err != nil {
			return "", nil, err
		}
	}
	pinned := map[string]bool{}
	for _, k := range githubHostKeys {
		pinned[k.Fingerprint] = true
	}
	var lines []string
	for _, k := range keys {
		fp, err := fingerprintOf(k.Blob)
		if err != nil {
			return "", nil, fmt.Errorf("GitHub %s host key: %w", k.Type, err)
		}
		if fp == retiredGitHubRSA {
			return "", nil, fmt.Errorf("GitHub %s host key SHA256:%s is the RSA key GitHub retired on 2023-03-24 and must not be trusted", k.Type, fp)
		}
		if fp != k.Fingerprint {
			return "", nil, fmt.Errorf("GitHub %s host key has fingerprint SHA256:%s, but GitHub publishes SHA256:%s", k.Type, fp, k.Fingerprint)
		}
		if !pinned[fp] {
			return "", nil, fmt.Errorf("GitHub %s host key SHA256:%s is not one the collection pins (checked against GitHub's published fingerprints): github_meta_file may only confirm those keys; a key GitHub rotated in needs a collection release", k.Type, fp)
		}
		lines = append(lines, k.Type+" "+k.Blob)
	}
	var b strings.Builder
	for _, host := range GitHubHosts {
		for _, l := range lines {
			fmt.Fprintf(&b, "%s %s\n", host, l)
		}
	}
	return b.String(), warnings, nil
}

// keysFromMeta reads the ssh_keys and ssh_key_fingerprints of a saved
// https://api.github.com/meta answer. A key whose fingerprint is not
// published (a key announced for a future rotation) is left out with a
// warning.
func keysFromMeta(path string) ([]hostKey, []string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read github_meta_file: %w", err)
	}
	var meta struct {
		SSHKeys         []string          `json:"ssh_keys"`
		SSHFingerprints map[string]string `json:"ssh_key_fingerprints"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, nil, fmt.Errorf("github_meta_file %s is not GitHub's meta API JSON: %w", path, err)
	}
	if len(meta.SSHKeys) == 0 {
		return nil, nil, fmt.Errorf("github_meta_file %s has no ssh_keys", path)
	}
	var keys []hostKey
	var warnings []string
	for _, line := range meta.SSHKeys {
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, nil, fmt.Errorf("github_meta_file: ssh_keys entry %q is not \"<type> <key>\"", line)
		}
		published := meta.SSHFingerprints[metaFingerprintField[f[0]]]
		if published == "" {
			warnings = append(warnings, fmt.Sprintf("github_meta_file: GitHub publishes no fingerprint for its %s key; it is left out of known_hosts", f[0]))
			continue
		}
		keys = append(keys, hostKey{Type: f[0], Blob: f[1], Fingerprint: strings.TrimPrefix(published, "SHA256:")})
	}
	sortKeys(keys)
	return keys, warnings, nil
}

func sortKeys(keys []hostKey) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keyOrder[keys[j].Type] < keyOrder[keys[j-1].Type]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// Check accepts a known_hosts text given as is, after every line
// parses as OpenSSH known_hosts.
func Check(text string) (string, error) {
	scanner := bufio.NewScanner(strings.NewReader(text))
	n, lines := 0, 0
	for scanner.Scan() {
		n++
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, _, _, _, _, err := ssh.ParseKnownHosts([]byte(line)); err != nil {
			return "", fmt.Errorf("known_hosts line %d is not an OpenSSH known_hosts entry: %w", n, err)
		}
		lines++
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("read known_hosts: %w", err)
	}
	if lines == 0 {
		return "", fmt.Errorf("known_hosts holds no host key")
	}
	return strings.TrimRight(text, "\n") + "\n", nil
}
