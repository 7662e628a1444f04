package repocheck

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// generatorFile is a file a kustomize secretGenerator makes a Secret of.
type generatorFile struct {
	path string // relative to the kustomization's directory; scanCredentials makes it the root's
	from string // the kustomization file
	line int
	env  bool // envs: KEY=VALUE lines; files: the whole content is one value
}

// secretGenerators reports the literals a kustomization's secretGenerators
// hold in plain text and lists the files they read (envs, files).
func secretGenerators(root *yaml.Node) ([]credential, []generatorFile) {
	gens := field(root, "secretGenerator")
	if gens == nil || gens.Kind != yaml.SequenceNode {
		return nil, nil
	}
	var found []credential
	var refs []generatorFile
	for _, g := range gens.Content {
		name := scalar(g, "name")
		for _, lit := range entries(field(g, "literals")) {
			_, v, _ := strings.Cut(lit.Value, "=")
			if v = unquote(strings.TrimSpace(v)); v != "" && !fluxVariable.MatchString(v) && !encrypted(v) {
				found = append(found, credential{lit.Line, fmt.Sprintf("a secretGenerator %s's literals in plain text", name)})
				break
			}
		}
		// env: one file, kustomize's older spelling of envs.
		for _, e := range append(entries(field(g, "envs")), entries(field(g, "env"))...) {
			refs = append(refs, generatorFile{path: e.Value, line: e.Line, env: true})
		}
		for _, f := range entries(field(g, "files")) {
			file := f.Value
			if _, after, ok := strings.Cut(file, "="); ok { // key=path
				file = after
			}
			refs = append(refs, generatorFile{path: file, line: f.Line})
		}
	}
	return found, refs
}

// entries are a sequence's scalars, or a scalar alone.
func entries(n *yaml.Node) []*yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		return []*yaml.Node{n}
	}
	var out []*yaml.Node
	if n.Kind == yaml.SequenceNode {
		for _, e := range n.Content {
			if e = resolve(e); e.Kind == yaml.ScalarNode && e.Value != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// generatedValues is the finding for a file a secretGenerator reads: an
// env file with a value in plain text (SOPS-encrypted values, its sops_*
// metadata and Flux substitutions pass), or any other file that is not
// SOPS-encrypted (kustomize-controller decrypts those) and not empty.
func generatedValues(content []byte, g generatorFile) (credential, bool) {
	c := credential{1, fmt.Sprintf("values a secretGenerator makes a Secret of (%s line %d)", g.from, g.line)}
	if bytes.HasPrefix(bytes.TrimSpace(content), []byte("$ANSIBLE_VAULT;")) {
		return credential{}, false
	}
	if !g.env {
		return c, len(bytes.TrimSpace(content)) > 0 && !sopsMetadata.Match(content)
	}
	for i, line := range strings.Split(string(content), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, v, _ := strings.Cut(line, "=")
		if v = unquote(strings.TrimSpace(v)); strings.HasPrefix(key, "sops_") || v == "" || fluxVariable.MatchString(v) || encrypted(v) {
			continue
		}
		c.line = i + 1
		return c, true
	}
	return credential{}, false
}
