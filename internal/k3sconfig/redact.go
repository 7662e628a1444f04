package k3sconfig

import (
	"fmt"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
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
// with a placeholder. It works on lines, not on a parse, so that a
// hand-edited file is shown as it is, comments included.
func redact(content string) string {
	return redactWith(content, func(string, string) string { return ansible.Redacted })
}

// redactor rewrites each secret scalar in a file's text with what mark
// returns for it; slot names the scalar's place, the same on both sides of
// a diff. redactWith is config.yaml's, redactRegistries registries.yaml's.
type redactor func(content string, mark func(slot, value string) string) string

// redactPairWith redacts both sides of a diff; on the after side a secret
// whose value differs from the same slot's on the before side says so.
func redactPairWith(redact redactor, before, after string) (string, string) {
	old := map[string]string{}
	b := redact(before, func(slot, value string) string {
		old[slot] = value
		return ansible.Redacted
	})
	a := redact(after, func(slot, value string) string {
		prev, ok := old[slot]
		return ansible.RedactedAs(ok && prev != value)
	})
	return b, a
}

// redactWith rewrites each secret scalar in content with what mark returns
// for it; slot names the key and the scalar's place under it.
func redactWith(content string, mark func(slot, value string) string) string {
	lines := strings.SplitAfter(content, "\n")
	secretKey, n := "", 0
	next := func(s string) string {
		n++
		return mark(fmt.Sprintf("%s#%d", secretKey, n), parseScalar(s))
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
