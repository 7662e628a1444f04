package k3sconfig

import (
	"strconv"
	"strings"
)

// The node-side binary is copied to every node on every task, so it does
// not link a YAML library: config.yaml is a flat map of scalars and string
// lists, which this file writes in one canonical form and reads back for
// diffs. The tests check both against a real YAML parser.

// encodeYAML renders values (bool, int, string or []string) with keys
// sorted and lists in block style.
func encodeYAML(values map[string]any) string {
	var b strings.Builder
	encodeNested(&b, values, "")
	return b.String()
}

// yamlString writes s plain when no YAML 1.1 or 1.2 reader could take it
// for anything but that string, and double-quoted otherwise.
func yamlString(s string) string {
	if plainSafe(s) {
		return s
	}
	return strconv.Quote(s) // Go's escapes are a subset of YAML's double-quoted ones
}

// yaml11Words are the plain words YAML 1.1 (k3s's parser) reads as booleans
// or null.
var yaml11Words = map[string]bool{
	"y": true, "yes": true, "n": true, "no": true, "true": true, "false": true,
	"on": true, "off": true, "null": true,
}

func plainSafe(s string) bool {
	if s == "" || yaml11Words[strings.ToLower(s)] {
		return false
	}
	// A leading letter or slash rules out numbers, timestamps and every
	// YAML indicator character.
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._/=:@+", c) >= 0) {
			return false
		}
	}
	return !strings.HasSuffix(s, ":")
}

// parseScalar reads one YAML scalar as written after "key:" or "- ":
// quoted or plain, with a trailing comment dropped.
func parseScalar(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, `"`):
		if end := closingQuote(s); end > 0 {
			if v, err := strconv.Unquote(s[:end+1]); err == nil {
				return v
			}
			return s[1:end]
		}
	case strings.HasPrefix(s, "'"):
		body := s[1:]
		var b strings.Builder
		for i := 0; i < len(body); i++ {
			if body[i] == '\'' {
				if i+1 < len(body) && body[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				return b.String()
			}
			b.WriteByte(body[i])
		}
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// closingQuote is the index of the quote ending a double-quoted scalar.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}
