package yamlredact

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func password(path []string) (string, bool) {
	last := path[len(path)-1]
	return last, last == "password"
}

func TestRedact(t *testing.T) {
	mark := func(slot string) string { return "<" + slot + ">" }
	noLines := Lines(nil)
	keepAll := Lines(func(content string, _ func(string) string) string { return content })
	for name, tc := range map[string]struct {
		content string
		lines   Lines
		want    string
	}{
		"empty":                                {"", nil, ""},
		"several documents":                    {"password: a1\n---\nlist:\n  - password: b2\n", noLines, "password: \"<password#1>\"\n---\nlist:\n  - password: \"<password#1>\"\n"},
		"a list under a secret key":            {"password: [x1, y2]\n", noLines, "password: [\"<password#1>\", \"<password#2>\"]\n"},
		"a block under a secret key is walked": {"password:\n  user: u\n  password: p1\n", noLines, "password:\n  user: u\n  password: \"<password#1>\"\n"},
		"line text that leaks is not used":     {"password: p1\n", keepAll, "password: \"<password#1>\"\n"},
		"does not parse":                       {"a: [b\n", keepAll, NotShown},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Redact(tc.content, tc.lines, password, mark))
		})
	}
}

func TestValues(t *testing.T) {
	v, ok := Values("password: a1\nother: b\nnested: {password: c3}\n", password)
	assert.True(t, ok)
	assert.Equal(t, map[string]string{"password#1": "c3"}, v, "one slot per name: the last one found")
	_, ok = Values("a: [b\n", password)
	assert.False(t, ok)
}
