// Package yamlredact redacts the secrets of a YAML file (JSON is YAML) for a
// diff, whatever style the file is written in. A line-based redaction keeps
// a hand-edited file as it is, comments included; this package parses the
// file to know its secrets, keeps the line-based text only when none of them
// is left in it, and else shows the parsed file rendered again with every
// secret replaced. A file that does not parse is not shown at all: nothing
// can tell its secrets apart.
package yamlredact

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// NotShown stands for a file that does not parse.
const NotShown = "<not shown: does not parse>"

// Finder tells whether the scalar at path (the mapping keys and
// "[index]"es from the document's root) is a secret, and names its slot:
// the same scalar on both sides of a diff has the same slot.
type Finder func(path []string) (slot string, secret bool)

// Lines is a line-based redaction: it rewrites each secret scalar it finds
// with mark(slot).
type Lines func(content string, mark func(slot string) string) string

// Values are the secret scalars of content by slot; ok is false when it
// does not parse.
func Values(content string, find Finder) (values map[string]string, ok bool) {
	docs, err := parse(content)
	if err != nil {
		return nil, false
	}
	values = map[string]string{}
	for _, doc := range docs {
		walk(doc, nil, find, func(slot string, n *yaml.Node) { values[slot] = n.Value })
	}
	return values, true
}

// Redact is content with every secret scalar replaced by mark(slot): the
// line-based text when it holds none of the secrets the parse found, else
// the parsed documents rendered again; NotShown when content does not parse.
func Redact(content string, lines Lines, find Finder, mark func(slot string) string) string {
	if strings.TrimSpace(content) == "" {
		return content
	}
	docs, err := parse(content)
	if err != nil {
		return NotShown
	}
	var secrets []string
	for _, doc := range docs {
		walk(doc, nil, find, func(_ string, n *yaml.Node) { secrets = append(secrets, n.Value) })
	}
	if lines != nil {
		text := lines(content, mark)
		if !leaks(text, secrets) {
			return text
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, doc := range docs {
		walk(doc, nil, find, func(slot string, n *yaml.Node) {
			n.Value, n.Style, n.Tag = mark(slot), yaml.DoubleQuotedStyle, "!!str"
		})
		if err := enc.Encode(doc); err != nil {
			return NotShown
		}
	}
	if err := enc.Close(); err != nil {
		return NotShown
	}
	return b.String()
}

// leaks tells whether any secret is still in text. An empty secret hides
// nothing.
func leaks(text string, secrets []string) bool {
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			return true
		}
	}
	return false
}

func parse(content string) ([]*yaml.Node, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(content))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &doc)
	}
}

// walk calls secret for every scalar that find says is one. A secret key
// holding a list makes each scalar in it a secret (slots numbered in
// document order, as a line-based redaction meets them).
func walk(n *yaml.Node, path []string, find Finder, secret func(slot string, n *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, path, find, secret)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := append(append([]string{}, path...), n.Content[i].Value)
			// A mapping under a secret key is a block of keys (registries'
			// auth: username beside password), each found on its own.
			if slot, ok := find(p); ok && n.Content[i+1].Kind != yaml.MappingNode {
				count := 0
				scalars(n.Content[i+1], func(s *yaml.Node) {
					count++
					secret(slot+"#"+strconv.Itoa(count), s)
				})
				continue
			}
			walk(n.Content[i+1], p, find, secret)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walk(c, append(append([]string{}, path...), "["+strconv.Itoa(i)+"]"), find, secret)
		}
	}
}

// scalars calls f for every scalar in n, in document order (mapping values,
// not their keys).
func scalars(n *yaml.Node, f func(*yaml.Node)) {
	switch n.Kind {
	case yaml.ScalarNode:
		f(n)
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			scalars(n.Content[i], f)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			scalars(c, f)
		}
	}
}
