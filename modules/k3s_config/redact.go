package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// fingerprint stands in for a secret in a diff: equal secrets give equal
// fingerprints, so a diff still shows whether a token changed.
func fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "<redacted sha256:" + hex.EncodeToString(sum[:])[:12] + ">"
}

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
// with its fingerprint, for diffs. It works on lines, not on a parse, so
// that a hand-edited file is shown as it is, comments included.
func redact(content string) string {
	lines := strings.SplitAfter(content, "\n")
	inSecret := false
	for i, line := range lines {
		body := strings.TrimRight(line, "\n")
		nl := line[len(body):]
		if name, value, ok := topLevelKey(body); ok {
			if ownedKeys[name] == "token" {
				name = "token" // the alias t
			}
			inSecret = secretKeys[name]
			if inSecret && value != "" {
				key, _, _ := strings.Cut(body, ":")
				lines[i] = key + ": " + redactScalar(value) + nl
			}
			continue
		}
		trimmed := strings.TrimSpace(body)
		if inSecret && strings.HasPrefix(body, " ") || inSecret && strings.HasPrefix(body, "-") {
			indent := body[:len(body)-len(strings.TrimLeft(body, " "))]
			if item, ok := strings.CutPrefix(trimmed, "- "); ok {
				lines[i] = indent + "- " + redactScalar(item) + nl
			} else if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				lines[i] = indent + redactScalar(trimmed) + nl
			}
			continue
		}
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			inSecret = false
		}
	}
	return strings.Join(lines, "")
}

// redactScalar fingerprints the value a YAML scalar holds, so that "x",
// 'x' and x give the same fingerprint.
func redactScalar(s string) string {
	return fingerprint(parseScalar(s))
}
