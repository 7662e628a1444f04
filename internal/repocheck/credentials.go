package repocheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// The repository Flux pulls is read by everyone who can read it, and often
// by the world: a credential committed to it is published. The scan reads
// every file a push would take (tracked, or untracked and not ignored: what
// `git add -A` adds) and reports each credential by file, line and kind,
// never by value.

// PushedFile is a file of the repository that a push would take.
type PushedFile struct {
	Path    string // slash-separated, relative to the root
	Tracked bool   // false: untracked, not ignored (or no git work tree)
}

// pushable lists what a push would take: `git ls-files` of the tracked
// files and of the untracked ones .gitignore leaves in. Outside a git work
// tree, or without git, every file under root but .git counts: nothing
// ignores anything there.
func pushable(root string) ([]PushedFile, bool, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		files, err := walkAll(root)
		return files, false, err
	}
	var files []PushedFile
	for _, entry := range strings.Split(string(out), "\x00") {
		// "H path" (tracked), "? path" (untracked); S, M, R, C, K are tracked too.
		if len(entry) < 3 {
			continue
		}
		files = append(files, PushedFile{Path: entry[2:], Tracked: entry[0] != '?'})
	}
	return files, true, nil
}

func walkAll(root string) ([]PushedFile, error) {
	var files []PushedFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, PushedFile{Path: filepath.ToSlash(rel)})
		}
		return nil
	})
	return files, err
}

// maxScanned is the largest file read: a credential file is small, and a
// large file is an asset.
const maxScanned = 4 << 20

// scanCredentials reports each pushable file of root that holds a credential.
func scanCredentials(root string) ([]Problem, error) {
	files, inGit, err := pushable(root)
	if err != nil {
		return nil, fmt.Errorf("list the repository's files: %w", err)
	}
	var problems []Problem
	for _, f := range files {
		content, err := readSmallRegular(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		found := credentialsIn(content)
		if len(found) == 0 {
			continue
		}
		problems = append(problems, credentialProblem(f, inGit, found))
	}
	return problems, nil
}

// readSmallRegular reads a regular text file; nil for anything else (a
// symbolic link, a submodule, a file gone since git listed it, a binary or
// large file).
func readSmallRegular(path string) ([]byte, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > maxScanned {
		return nil, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	content, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0 {
		return nil, nil // binary, as git tells one
	}
	return content, nil
}

func credentialProblem(f PushedFile, inGit bool, found []credential) Problem {
	what := make([]string, 0, len(found))
	for _, c := range found {
		what = append(what, fmt.Sprintf("%s (line %d)", c.what, c.line))
	}
	p := Problem{Kind: "credential", Path: f.Path}
	switch {
	case f.Tracked:
		p.Message = fmt.Sprintf("%s is tracked by git and holds %s: a push publishes it to everyone who can read the repository", f.Path, strings.Join(what, ", "))
		p.Fix = fmt.Sprintf("take it out of git (`git rm --cached %s`, then list it in .gitignore) or encrypt it with SOPS; a credential that was ever pushed must be rotated", f.Path)
	case inGit:
		p.Message = fmt.Sprintf("%s is not ignored by git and holds %s: `git add -A` would add it, and a push publish it", f.Path, strings.Join(what, ", "))
		p.Fix = "list it in .gitignore, move it out of the repository, or encrypt it with SOPS"
	default:
		p.Message = fmt.Sprintf("%s holds %s, and the repository directory is not a git work tree that could ignore it: pushed, it would be published", f.Path, strings.Join(what, ", "))
		p.Fix = "move it out of the repository, or encrypt it with SOPS"
	}
	return p
}

type credential struct {
	line int
	what string
}

var (
	pemPrivateKey = regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----`)
	// age's Bech32 secret key (filippo.io/age, X25519Identity.String).
	ageSecretKey = regexp.MustCompile(`AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`)
	// k3s's secure token: K10, the CA's sha256, ::, user:password
	// (pkg/clientaccess/token.go, FormatToken).
	k3sSecureToken = regexp.MustCompile(`K10[0-9a-f]{64}::[^\s:"']+:[^\s"']+`)
	// SOPS writes its metadata under a top-level sops key (YAML, JSON) or as
	// sops_* lines (dotenv, INI), and every encrypted value as ENC[...].
	sopsMetadata = regexp.MustCompile(`(?m)^("sops"\s*:|sops:|sops_mac=|\[sops\])`)
)

// credentialsIn lists the credentials in a file's content, by line. A file
// encrypted with SOPS or Ansible Vault holds none that can be read.
func credentialsIn(content []byte) []credential {
	if bytes.HasPrefix(bytes.TrimSpace(content), []byte("$ANSIBLE_VAULT;")) ||
		(sopsMetadata.Match(content) && bytes.Contains(content, []byte("ENC[AES256_GCM,"))) {
		return nil
	}
	var found []credential
	for i, line := range bytes.Split(content, []byte("\n")) {
		for _, p := range []struct {
			re   *regexp.Regexp
			what string
		}{{pemPrivateKey, "a PEM private key"}, {ageSecretKey, "an age secret key"}, {k3sSecureToken, "a k3s token"}} {
			if p.re.Match(line) {
				found = append(found, credential{i + 1, p.what})
			}
		}
	}
	found = append(found, documentCredentials(content)...)
	sort.SliceStable(found, func(i, j int) bool { return found[i].line < found[j].line })
	return found
}

// documentCredentials reads the content as YAML (JSON is YAML) documents
// and reports kubeconfigs with credentials, Secrets in the clear and this
// collection's secret variables set in plain text. What does not parse is
// left to the line patterns.
func documentCredentials(content []byte) []credential {
	var found []credential
	dec := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return found
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		switch {
		case scalar(root, "kind") == "Config" || (field(root, "users") != nil && field(root, "clusters") != nil):
			found = append(found, kubeconfigCredentials(root)...)
		case scalar(root, "kind") == "Secret" && scalar(root, "apiVersion") == "v1":
			found = append(found, secretInTheClear(root)...)
		default:
			found = append(found, roleVariables(root)...)
		}
	}
}

// field is the value of key in a mapping node; nil when absent.
func field(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
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
			if v := field(user, key); filled(v) {
				found = append(found, credential{v.Line, fmt.Sprintf("a kubeconfig with credentials (users[%d].user.%s)", i, key)})
			}
		}
		config := field(field(user, "auth-provider"), "config")
		for _, key := range []string{"id-token", "refresh-token", "access-token", "client-secret"} {
			if v := field(config, key); filled(v) {
				found = append(found, credential{v.Line, fmt.Sprintf("a kubeconfig with credentials (users[%d].user.auth-provider.config.%s)", i, key)})
			}
		}
	}
	return found
}

// fluxVariable is a whole value that Flux's postBuild substitutes
// (${VAR}): the secret is not in the file.
var fluxVariable = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*(:?[=-][^}]*)?\}$`)

// secretInTheClear reports a Secret with data (a SOPS-encrypted one never
// gets here), unless every stringData value is a Flux substitution.
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
			if val := v.Content[i]; filled(val) && !(key == "stringData" && fluxVariable.MatchString(val.Value)) {
				return []credential{{val.Line, fmt.Sprintf("an unencrypted Kubernetes Secret %s (%s)", name, key)}}
			}
		}
	}
	return nil
}

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
		val := root.Content[i+1]
		if val.Kind == yaml.ScalarNode {
			if plain(val) {
				found = append(found, credential{val.Line, name + " in plain text"})
			}
			continue
		}
		// A dict: the values under keys that name a secret (client_secret,
		// password) or under a Secret's data.
		found = append(found, plainSecretsUnder(name, val, false)...)
	}
	return found
}

// plain is a scalar that holds a value as written: not empty, not a Jinja
// template, not vaulted.
func plain(v *yaml.Node) bool {
	return filled(v) && v.Tag != "!vault" && !strings.Contains(v.Value, "{{")
}

func plainSecretsUnder(path string, v *yaml.Node, secret bool) []credential {
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
			found = append(found, plainSecretsUnder(path+"."+key, child, data || (secret && child.Kind != yaml.MappingNode) || (named && child.Kind != yaml.MappingNode))...)
		}
	case yaml.SequenceNode:
		for i, e := range v.Content {
			found = append(found, plainSecretsUnder(fmt.Sprintf("%s[%d]", path, i), e, secret)...)
		}
	case yaml.ScalarNode:
		if secret && plain(v) {
			found = append(found, credential{v.Line, path + " in plain text"})
		}
	}
	return found
}
