package repocheck

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

type credential struct {
	line int
	what string
}

var (
	// A header alone is an example in a README, not a key: pemKeys asks
	// for the body and the footer too.
	pemHeader = regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----`)
	// RFC 1421's headers of an encrypted key (Proc-Type, DEK-Info).
	pemHeaderLines = regexp.MustCompile(`(?m)^[\s#]*[A-Za-z-]+:[^\n]*$`)
	// age's Bech32 secret keys (filippo.io/age: X25519Identity and
	// HybridIdentity). age itself reads only the upper-case form, but a
	// lower-case one is the same key once upper-cased.
	ageSecretKey = regexp.MustCompile(`(?i)AGE-SECRET-KEY-(?:PQ-)?1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`)
	// k3s's secure token: K10, the CA's sha256, ::, user:password
	// (pkg/clientaccess/token.go, FormatToken).
	k3sSecureToken = regexp.MustCompile(`K10[0-9a-f]{64}::[^\s:"']+:[^\s"']+`)
	// SOPS writes its metadata under a top-level sops key (YAML, JSON) or as
	// sops_* lines (dotenv, INI), and every encrypted value as ENC[...].
	sopsMetadata = regexp.MustCompile(`(?m)^("sops"\s*:|sops:|sops_mac=|\[sops\])`)
	// An Ansible INI inventory's key=value (host lines, [group:vars]) for
	// the roles' secret variables that are strings.
	iniSecretVariable = regexp.MustCompile(`(?:^|\s)(k8s_cluster_token|flux_bootstrap_git_deploy_key|flux_bootstrap_git_password|flux_bootstrap_git_bearer_token|flux_bootstrap_sops_age_key)\s*=\s*("[^"]*"|'[^']*'|\S*)`)
	// A YAML document starts at a --- line (yaml.v3 stops at the first
	// document that does not parse; yamlDocuments does not).
	documentStart = regexp.MustCompile(`^---(\s|$)`)
)

// credentialsIn lists the credentials in a file's content, by line.
func credentialsIn(content []byte) []credential {
	found, _ := readCredentials(content)
	return found
}

// readCredentials lists the credentials in a file's content, by line, and
// the files its kustomize secretGenerators read. An Ansible Vault file
// holds none that can be read; in a SOPS-encrypted file the ENC[...]
// values pass, and what SOPS left in plain text is read as in any file.
func readCredentials(content []byte) ([]credential, []generatorFile) {
	if bytes.HasPrefix(bytes.TrimSpace(content), []byte("$ANSIBLE_VAULT;")) {
		return nil, nil
	}
	found := pemKeys(content)
	for i, line := range bytes.Split(content, []byte("\n")) {
		found = append(found, lineCredentials(line, i+1)...)
	}
	var refs []generatorFile
	for _, doc := range yamlDocuments(content) {
		if root := doc.Content[0]; root.Kind == yaml.MappingNode {
			c, r := objectCredentials(root)
			found, refs = append(found, c...), append(refs, r...)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].line < found[j].line })
	return found, refs
}

// pemKeys are the PEM private key blocks: header, base64 body (indented,
// commented out, or in a string with \n escapes), footer.
func pemKeys(content []byte) []credential {
	var found []credential
	for _, m := range pemHeader.FindAllSubmatchIndex(content, -1) {
		footer := []byte("-----END " + string(content[m[2]:m[3]]) + "PRIVATE KEY-----")
		end := bytes.Index(content[m[1]:], footer)
		if end >= 0 && pemBody(string(content[m[1]:m[1]+end])) {
			found = append(found, credential{1 + bytes.Count(content[:m[0]], []byte("\n")), "a PEM private key"})
		}
	}
	return found
}

func pemBody(s string) bool {
	s = strings.NewReplacer(`\n`, "\n", `\r`, "\n").Replace(s)
	s = pemHeaderLines.ReplaceAllString(s, "")
	n := 0
	for _, r := range s {
		switch {
		case strings.ContainsRune(" \t\r\n#", r):
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '+', r == '/', r == '=':
			n++
		default:
			return false
		}
	}
	return n >= 16
}

func lineCredentials(line []byte, n int) []credential {
	var found []credential
	for _, p := range []struct {
		re   *regexp.Regexp
		what string
	}{{ageSecretKey, "an age secret key"}, {k3sSecureToken, "a k3s token"}} {
		if p.re.Match(line) {
			found = append(found, credential{n, p.what})
		}
	}
	if trimmed := bytes.TrimSpace(line); bytes.HasPrefix(trimmed, []byte("#")) || bytes.HasPrefix(trimmed, []byte(";")) {
		return found
	}
	for _, m := range iniSecretVariable.FindAllSubmatch(line, -1) {
		if v := unquote(string(m[2])); v != "" && !strings.Contains(v, "{{") && !strings.HasPrefix(v, "$") && !encrypted(v) {
			found = append(found, credential{n, string(m[1]) + " in plain text"})
		}
	}
	return found
}

// yamlDocuments parses each document of content alone, so one that does
// not parse leaves the others readable; node lines are the file's.
func yamlDocuments(content []byte) []*yaml.Node {
	var docs []*yaml.Node
	lines := bytes.SplitAfter(content, []byte("\n"))
	parse := func(from, to int) {
		var doc yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[from:to], nil), &doc) == nil && len(doc.Content) > 0 {
			shiftLines(&doc, from)
			docs = append(docs, &doc)
		}
	}
	start := 0
	for i, line := range lines {
		if i > start && documentStart.Match(line) {
			parse(start, i)
			start = i
		}
	}
	parse(start, len(lines))
	return docs
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// objectCredentials reads one object: a List's items (what `kubectl get
// -o yaml` writes), a kubeconfig, a Secret, a kustomization's
// secretGenerators, role variables; in a SOPS-encrypted object, a value
// under a secret's name that SOPS left in plain text.
func objectCredentials(root *yaml.Node) ([]credential, []generatorFile) {
	var found []credential
	switch {
	case scalar(root, "kind") == "List":
		var refs []generatorFile
		if items := field(root, "items"); items != nil && items.Kind == yaml.SequenceNode {
			for _, item := range items.Content {
				if item.Kind == yaml.MappingNode {
					c, r := objectCredentials(item)
					found, refs = append(found, c...), append(refs, r...)
				}
			}
		}
		return found, refs
	case scalar(root, "kind") == "Config" || hasKubeconfigUsers(root):
		found = kubeconfigCredentials(root)
	case scalar(root, "kind") == "Secret" && scalar(root, "apiVersion") == "v1":
		found = secretInTheClear(root)
	default:
		found = roleVariables(root)
	}
	generated, refs := secretGenerators(root)
	found = append(found, generated...)
	if len(found) == 0 && field(root, "sops") != nil {
		found = plainBesideSOPS(root)
	}
	return found, refs
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field is the value of key in a mapping node (aliases followed); nil when absent.
func field(m *yaml.Node, key string) *yaml.Node {
	if m = resolve(m); m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return resolve(m.Content[i+1])
		}
	}
	return nil
}

func scalar(m *yaml.Node, key string) string {
	if v := field(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// filled tells a value that holds something from an empty one.
func filled(v *yaml.Node) bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return v.Tag != "!!null" && v.Value != ""
	case yaml.MappingNode, yaml.SequenceNode:
		return len(v.Content) > 0
	}
	return false
}

// plain is a value as written: not empty, not a Jinja template, not
// vaulted, not encrypted by SOPS.
func plain(v *yaml.Node) bool {
	return filled(v) && v.Tag != "!vault" && !strings.Contains(v.Value, "{{") && !encrypted(v.Value)
}

// encrypted is a value SOPS encrypted (ENC[AES256_GCM,data:...,type:str]).
func encrypted(v string) bool {
	return strings.HasPrefix(v, "ENC[") && strings.HasSuffix(v, "]")
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// hasKubeconfigUsers tells a kubeconfig without kind or clusters (a
// user's credentials alone) by its users' shape: users[].user, a mapping.
func hasKubeconfigUsers(root *yaml.Node) bool {
	users := field(root, "users")
	if users == nil || users.Kind != yaml.SequenceNode {
		return false
	}
	for _, u := range users.Content {
		if user := field(u, "user"); user != nil && user.Kind == yaml.MappingNode {
			return true
		}
	}
	return false
}

// kubeconfigCredentials are the users' keys that authenticate by
// themselves (client-go's clientcmd api: client-key-data, token, password,
// an auth-provider's tokens); a path to a key file is not one.
func kubeconfigCredentials(root *yaml.Node) []credential {
	var found []credential
	users := field(root, "users")
	if users == nil || users.Kind != yaml.SequenceNode {
		return nil
	}
	for i, u := range users.Content {
		user := field(u, "user")
		for _, key := range []string{"client-key-data", "token", "password"} {
			if v := field(user, key); plain(v) {
				found = append(found, credential{v.Line, fmt.Sprintf("a kubeconfig with credentials (users[%d].user.%s)", i, key)})
			}
		}
		config := field(field(user, "auth-provider"), "config")
		for _, key := range []string{"id-token", "refresh-token", "access-token", "client-secret"} {
			if v := field(config, key); plain(v) {
				found = append(found, credential{v.Line, fmt.Sprintf("a kubeconfig with credentials (users[%d].user.auth-provider.config.%s)", i, key)})
			}
		}
	}
	return found
}

// fluxVariable is a whole value that Flux's postBuild substitutes
// (${VAR}): the secret is not in the file.
var fluxVariable = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*(:?[=-][^}]*)?\}$`)

// secretInTheClear reports a Secret with data or stringData in plain
// text: SOPS-encrypted values and Flux substitutions pass.
func secretInTheClear(root *yaml.Node) []credential {
	name := scalar(field(root, "metadata"), "name")
	if ns := scalar(field(root, "metadata"), "namespace"); ns != "" {
		name = ns + "/" + name
	}
	for _, key := range []string{"data", "stringData"} {
		v := field(root, key)
		if !filled(v) || v.Kind != yaml.MappingNode {
			continue
		}
		for i := 1; i < len(v.Content); i += 2 {
			if val := resolve(v.Content[i]); plain(val) && !fluxVariable.MatchString(val.Value) {
				return []credential{{val.Line, fmt.Sprintf("an unencrypted Kubernetes Secret %s (%s)", name, key)}}
			}
		}
	}
	return nil
}
