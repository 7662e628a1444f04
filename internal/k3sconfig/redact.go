package k3sconfig

import (
	"fmt"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/yamlredact"
)

// topLevelKey splits "key: value" (or "key+:", "key:" opening a block) at
// column 0; ok is false for other lines.
func topLevelKey(line string) (name, value string, ok bool) {
	if line == "" || line[0] == ' ' || line[0] == '-' || line[0] == '#' {
		return "", "", false
	}
	key, rest, found := strings.Cut(line, ":")
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", "", false
	}
	key = strings.TrimSuffix(strings.Trim(strings.TrimSpace(key), `"'`), "+")
	return key, strings.TrimSpace(rest), true
}

// redact replaces the value of every secret key in a config file's text
// with a placeholder, line by line: for the checksum of the module's own
// rendering.
func redact(content string) string {
	return redactWith(content, func(string) string { return ansible.Redacted })
}

// redactor is how a file's secrets are found: line by line, to show a
// hand-edited file as it is, and by a parse, which the line-based text must
// agree with (yamlredact). redactWith and configSecret are config.yaml's,
// redactRegistries and registrySecret registries.yaml's.
type redactor struct {
	lines yamlredact.Lines
	find  yamlredact.Finder
}

var (
	configRedactor     = redactor{redactWith, configSecret}
	registriesRedactor = redactor{redactRegistries, registrySecret}
)

// configSecret: a top-level key of k3s's config that holds a credential
// (the alias t and a key+ that appends included).
func configSecret(path []string) (string, bool) {
	if len(path) != 1 {
		return "", false
	}
	name := strings.TrimSuffix(path[0], "+")
	if ownedKeys[name] == "token" {
		name = "token"
	}
	return name, secretKeys[name]
}

// redactPairWith redacts both sides of a diff, each parsed to find its
// secrets whatever its style; on the after side a secret whose value
// differs from the same slot's on the before side says so.
func redactPairWith(r redactor, before, after string) (string, string) {
	old, _ := yamlredact.Values(before, r.find)
	cur, _ := yamlredact.Values(after, r.find)
	b := yamlredact.Redact(before, r.lines, r.find, func(string) string { return ansible.Redacted })
	a := yamlredact.Redact(after, r.lines, r.find, func(slot string) string {
		prev, ok := old[slot]
		return ansible.RedactedAs(ok && prev != cur[slot])
	})
	return b, a
}

// redactWith rewrites each secret scalar in content with what mark returns
// for it; slot names the key and the scalar's place under it.
func redactWith(content string, mark func(slot string) string) string {
	lines := strings.SplitAfter(content, "\n")
	secretKey, n := "", 0
	next := func(s string) string {
		n++
		return mark(fmt.Sprintf("%s#%d", secretKey, n))
	}
	for i, line := range lines {
		body := strings.TrimRight(line, "\n")
		nl := line[len(body):]
		if name, value, ok := topLevelKey(body); ok {
			if ownedKeys[name] == "token" {
				name = "token" // the alias t
			}
			secretKey, n = "", 0
			if secretKeys[name] {
				secretKey = name
			}
			if secretKey != "" && value != "" {
				key, _, _ := strings.Cut(body, ":")
				lines[i] = key + ": " + next(value) + nl
			}
			continue
		}
		trimmed := strings.TrimSpace(body)
		if secretKey != "" && (strings.HasPrefix(body, " ") || strings.HasPrefix(body, "-")) {
			indent := body[:len(body)-len(strings.TrimLeft(body, " "))]
			if item, ok := strings.CutPrefix(trimmed, "- "); ok {
				lines[i] = indent + "- " + next(item) + nl
			} else if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				lines[i] = indent + next(trimmed) + nl
			}
			continue
		}
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			secretKey = ""
		}
	}
	return strings.Join(lines, "")
}
