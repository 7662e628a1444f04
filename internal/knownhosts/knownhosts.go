// Package knownhosts is the SSH host keys the collection trusts: GitHub's,
// GitLab's and Codeberg's, pinned with their published fingerprints, and a
// user's known_hosts text checked line by line. seed_secret writes them into
// Flux's Secrets; flux_repo_check reads which hosts they are for.
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

// gitlabHostKeys are gitlab.com's SSH host keys. Their fingerprints are the
// ones GitLab publishes under "SSH host keys fingerprints" at
// https://docs.gitlab.com/user/gitlab_com/#ssh-host-keys-fingerprints
// (formerly https://about.gitlab.com/gitlab-com/settings/, the copy these
// were read from); each key's sha256 was computed and matched to them.
var gitlabHostKeys = []hostKey{
	{"ecdsa-sha2-nistp256", "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBFSMqzJeV9rUzU4kWitGjeR4PWSa29SPqJ1fVkhtj3Hw9xjLVXVYrU9QlYWrOLXBpQ6KWjbjTDTdDkoohFzgbEY=", "HbW3g8zUjNSksFbqTiUWPWg2Bq1x8xdGUrliXFzSnUw"},
	{"ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIAfuCHKVTjquxvt6CM6tdG4SLp1Btn/nOeHHE5UOzRdf", "eUXGGm1YGsMAS7vkcx6JOJdOGHPem5gQp4taiCfCLB8"},
	{"ssh-rsa", "AAAAB3NzaC1yc2EAAAADAQABAAABAQCsj2bNKTBSpIYDEGk9KxsGh3mySTRgMtXL583qmBpzeQ+jqCMRgBqB98u3z++J1sKlXHWfM9dyhSevkMwSbhoR8XIq/U0tCNyokEi/ueaBMCvbcTHhO7FcwzY92WK4Yt0aGROY5qX2UKSeOvuP4D6TPqKF1onrSzH9bx9XUf2lEdWT/ia1NEKjunUqu1xOB/StKDHMoX4/OKyIzuS0q/T1zOATthvasJFoPrAjkohTyaDUz2LN5JoH839hViyEG82yB+MjcFV5MU3N1l1QL3cVUCh93xSaua1N85qivl+siMkPGbO5xR/En4iEY6K2XPASUEMaieWVNTRCtJ4S8H+9", "ROQFvPThGrW4RuWLoL9tq9I9zJ42fK4XywyRtbOz/EQ"},
}

// codebergHostKeys are codeberg.org's SSH host keys. Their fingerprints are
// the ones Codeberg publishes at
// https://docs.codeberg.org/security/ssh-fingerprint/ (the SHA256 form of
// those in its Imprint, https://codeberg.org/Codeberg/org/src/branch/main/Imprint.md#user-content-ssh-fingerprints);
// each key's sha256 was computed and matched to them.
var codebergHostKeys = []hostKey{
	{"ecdsa-sha2-nistp256", "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL2pDxWr18SoiDJCGZ5LmxPygTlPu+cCKSkpqkvCyQzl5xmIMeKNdfdBpfbCGDPoZQghePzFZkKJNR/v9Win3Sc=", "T9FYDEHELhVkulEKKwge5aVhVTbqCW0MIRwAfpARs/E"},
	{"ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIIVIC02vnjFyL+I4RHfvIGNtOgJMe769VTF1VR4EB3ZB", "mIlxA9k46MmM6qdJOdMnAQpzGxF4WIVVL+fj+wZbw0g"},
	{"ssh-rsa", "AAAAB3NzaC1yc2EAAAADAQABAAABAQC8hZi7K1/2E2uBX8gwPRJAHvRAob+3Sn+y2hxiEhN0buv1igjYFTgFO2qQD8vLfU/HT/P/rqvEeTvaDfY1y/vcvQ8+YuUYyTwE2UaVU5aJv89y6PEZBYycaJCPdGIfZlLMmjilh/Sk8IWSEK6dQr+g686lu5cSWrFW60ixWpHpEVB26eRWin3lKYWSQGMwwKv4LwmW3ouqqs4Z4vsqRFqXJ/eCi3yhpT+nOjljXvZKiYTpYajqUC48IHAxTWugrKe1vXWOPxVXXMQEPsaIRc2hpK+v1LmfB7GnEGvF1UAKnEZbUuiD9PBEeD5a1MZQIzcoPWCrTxipEpuXQ5Tni4mN", "6QQmYi4ppFS4/+zSZ5S4IU+4sa6rwvQ4PbhCtPEBekQ"},
}

// retiredGitHubRSA is the RSA host key GitHub replaced on 2023-03-24
// after it was exposed; it must never be trusted again.
const retiredGitHubRSA = "nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"

// forge is a git host whose SSH host keys the collection pins.
type forge struct {
	title string
	hosts []string
	keys  []hostKey
	// retired are fingerprints of keys the forge replaced, and why.
	retired map[string]string
}

// forges are the known_hosts option's names for pinned keys. Only
// gitlab.com itself: altssh.gitlab.com (port 443) is not on GitLab's list.
var forges = map[string]forge{
	"github":   {title: "GitHub", hosts: GitHubHosts, keys: githubHostKeys, retired: map[string]string{retiredGitHubRSA: "the RSA key GitHub retired on 2023-03-24"}},
	"gitlab":   {title: "GitLab", hosts: []string{"gitlab.com"}, keys: gitlabHostKeys},
	"codeberg": {title: "Codeberg", hosts: []string{"codeberg.org"}, keys: codebergHostKeys},
}

// Names are the known_hosts values that select a forge's pinned keys.
var Names = []string{"github", "gitlab", "codeberg"}

// Hosts are the names the pinned known_hosts lines of forge name are for,
// and whether name is one (Names).
func Hosts(name string) ([]string, bool) {
	f, ok := forges[name]
	return f.hosts, ok
}

// Pinned renders known_hosts from the built-in keys of forge name (Names),
// every key checked against its published fingerprint.
func Pinned(name string) (string, error) {
	f, ok := forges[name]
	if !ok {
		return "", fmt.Errorf("%q is not a forge whose host keys the collection pins (%s)", name, strings.Join(Names, ", "))
	}
	return f.render(f.keys)
}

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
	if metaFile == "" {
		text, err := Pinned("github")
		return text, nil, err
	}
	keys, warnings, err := keysFromMeta(metaFile)
	if err != nil {
		return "", nil, err
	}
	text, err := forges["github"].render(keys)
	if err != nil {
		return "", nil, fmt.Errorf("github_meta_file may only confirm the keys the collection pins: %w", err)
	}
	return text, warnings, nil
}

// render writes one line per key for each of the forge's hosts, after each
// key matches its published fingerprint and one the collection pins, and
// is none the forge retired.
func (f forge) render(keys []hostKey) (string, error) {
	pinned := map[string]bool{}
	for _, k := range f.keys {
		pinned[k.Fingerprint] = true
	}
	var lines []string
	for _, k := range keys {
		fp, err := fingerprintOf(k.Blob)
		if err != nil {
			return "", fmt.Errorf("%s %s host key: %w", f.title, k.Type, err)
		}
		if why, ok := f.retired[fp]; ok {
			return "", fmt.Errorf("%s %s host key SHA256:%s is %s and must not be trusted", f.title, k.Type, fp, why)
		}
		if fp != k.Fingerprint {
			return "", fmt.Errorf("%s %s host key has fingerprint SHA256:%s, but %s publishes SHA256:%s", f.title, k.Type, fp, f.title, k.Fingerprint)
		}
		if !pinned[fp] {
			return "", fmt.Errorf("%s %s host key SHA256:%s is not one the collection pins (checked against %s's published fingerprints): a key %s rotated in needs a collection release", f.title, k.Type, fp, f.title, f.title)
		}
		lines = append(lines, k.Type+" "+k.Blob)
	}
	var b strings.Builder
	for _, host := range f.hosts {
		for _, l := range lines {
			fmt.Fprintf(&b, "%s %s\n", host, l)
		}
	}
	return b.String(), nil
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
