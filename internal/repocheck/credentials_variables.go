package repocheck

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// secretVariables are this collection's role variables that hold secrets
// (no_log in the roles' argument_specs). A file that sets one in plain text
// (not a template, not an Ansible Vault value) holds the secret.
var secretVariables = map[string]bool{
	"k8s_cluster_token": true, "k8s_cluster_registries": true,
	"flux_bootstrap_git_deploy_key": true, "flux_bootstrap_git_password": true, "flux_bootstrap_git_bearer_token": true,
	"flux_bootstrap_sops_age_key": true, "flux_bootstrap_extra_secrets": true, "flux_bootstrap_infisical_auth": true,
}

func roleVariables(root *yaml.Node) []credential {
	var found []credential
	for i := 0; i+1 < len(root.Content); i += 2 {
		name := root.Content[i].Value
		if !secretVariables[name] {
			continue
		}
		val := resolve(root.Content[i+1])
		if val.Kind == yaml.ScalarNode {
			if plain(val) {
				found = append(found, credential{val.Line, name + " in plain text"})
			}
			continue
		}
		// A dict: the values under keys that name a secret (client_secret,
		// password) or under a Secret's data.
		found = append(found, plainSecretsUnder(name, val, false, map[*yaml.Node]bool{})...)
	}
	return found
}

// follow resolves an alias once per anchor: a walk through aliases of
// aliases would otherwise grow exponentially (the billion laughs).
func follow(n *yaml.Node, seen map[*yaml.Node]bool) (*yaml.Node, bool) {
	if n.Kind != yaml.AliasNode {
		return n, true
	}
	target := resolve(n)
	if target == nil || seen[target] {
		return nil, false
	}
	seen[target] = true
	return target, true
}

func plainSecretsUnder(path string, v *yaml.Node, secret bool, seen map[*yaml.Node]bool) []credential {
	v, ok := follow(v, seen)
	if !ok {
		return nil
	}
	var found []credential
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			key, child := v.Content[i].Value, v.Content[i+1]
			// A key that names a secret marks what it holds, not a block under
			// it (registries' auth: username beside password); a Secret's data
			// holds secrets under any name; a *_file names a path.
			named := ansible.SecretName(key) && !strings.HasSuffix(strings.ToLower(key), "file") && !strings.HasSuffix(strings.ToLower(key), "path")
			data := key == "data" || key == "string_data" || key == "stringData"
			leaf := resolve(child).Kind != yaml.MappingNode
			found = append(found, plainSecretsUnder(path+"."+key, child, data || (secret && leaf) || (named && leaf), seen)...)
		}
	case yaml.SequenceNode:
		for i, e := range v.Content {
			found = append(found, plainSecretsUnder(fmt.Sprintf("%s[%d]", path, i), e, secret, seen)...)
		}
	case yaml.ScalarNode:
		if secret && plain(v) {
			found = append(found, credential{v.Line, path + " in plain text"})
		}
	}
	return found
}

// plainBesideSOPS reports, in an object SOPS encrypted, a value under a
// secret's name that is still in plain text: encrypted_regex (often
// ^(data|stringData)$, copied from a .sops.yaml made for Secrets) or
// unencrypted_suffix left it out, and a push publishes it.
func plainBesideSOPS(root *yaml.Node) []credential {
	var found []credential
	seen := map[*yaml.Node]bool{}
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		n, ok := follow(n, seen)
		if !ok {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, child := n.Content[i].Value, n.Content[i+1]
				if path == "" && key == "sops" {
					continue
				}
				if c := resolve(child); c.Kind == yaml.ScalarNode && secretLooking(key) && plain(c) && len(c.Value) >= 8 && !fluxVariable.MatchString(c.Value) {
					found = append(found, credential{c.Line, strings.TrimPrefix(path+"."+key, ".") + " in plain text in a SOPS-encrypted file"})
				}
				walk(path+"."+key, child)
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", root)
	return found
}

// secretLooking is a key whose name says it holds a secret (ansible's
// SecretName), less the names of a reference to one (existingSecret,
// secretName, tokenFile, passwordSecretRef) or of a public key.
func secretLooking(key string) bool {
	f := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(key))
	if !ansible.SecretName(key) || strings.HasPrefix(f, "existing") || strings.Contains(f, "public") {
		return false
	}
	for _, suffix := range []string{"file", "path", "name", "ref", "type"} {
		if strings.HasSuffix(f, suffix) {
			return false
		}
	}
	return true
}
