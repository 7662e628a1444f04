package k3sconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// DefaultRegistriesPath is where k3s reads its private registry
// configuration (containerd's mirrors, rewrites, credentials and TLS).
const DefaultRegistriesPath = "/etc/rancher/k3s/registries.yaml"

// RegistriesModule is served by the k3s_config binary (a node already has
// it: no other binary to send).
// RegistriesModule is k3s_registries: registries.yaml, k3s's private registries.
var RegistriesModule = &ansible.Module{
	Name:             "k3s_registries",
	ShortDescription: "Render k3s's private registry configuration (registries.yaml) on a node",
	Description: []string{
		"Writes C(/etc/rancher/k3s/registries.yaml): the registry mirrors (endpoints and image name rewrites) and, per registry, the credentials and TLS files containerd uses to pull through k3s.",
		"Every field is checked against k3s's schema (a misspelt key is named, with the key it is one slip from), endpoints must be http or https URLs, rewrites valid regular expressions, TLS files absolute paths.",
		"The file is canonical (keys sorted), written atomically, mode 0600 and owned by root, because it holds the registry credentials; C(restart_needed) says when k3s must restart to read it.",
		"Served by the k3s_config binary: a node needs no Python and receives no other binary.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Platforms: "linux",
	Notes: []string{
		"k3s reads registries.yaml only when it starts: act on C(restart_needed) by restarting the k3s service (role k8s_cluster does).",
		"In diffs the values of C(password), C(auth) and C(identity_token) are replaced by C(<redacted>), and on the new side by C(<redacted, changed>) where the value changed; nothing derived from them is shown, and they are masked in the result like a no_log option. A file already on the node is parsed to find them whatever its style, as M(gitops.k3s_flux.k3s_config) does (C(<not shown: does not parse>) when it does not parse).",
	},
	Spec: ansible.Spec{
		Options: []ansible.Option{
			{Name: "path", Type: ansible.TypePath, Default: DefaultRegistriesPath,
				Description: []string{"The registries file."}},
			{Name: "mirrors", Type: ansible.TypeDict, Default: map[string]any{}, NoLogValues: ansible.URLPasswordsIn,
				Description: []string{"Per registry host (C(docker.io), C(registry.example.com:5000), or C(*) for every registry): C(endpoint), the list of mirror URLs tried in order (a URL holding credentials is refused: containerd does not use them; they go in C(configs); their password is masked in every form), and C(rewrite), a dict of regular expression to replacement for the image name."}},
			{Name: "configs", Type: ansible.TypeDict, Default: map[string]any{}, NoLogValues: func(v any) []string { return append(registrySecretValues(v), tlsSecretValues(v)...) },
				Description: []string{"Per registry host or mirror endpoint host: C(auth) (C(username), C(password), C(auth), C(identity_token): what k3s reads; a C(token) key, which k3s ignores and would pull without credentials, is refused) and C(tls) (C(ca_file), C(cert_file), C(key_file), C(insecure_skip_verify)).", "C(tls) may give the PEM content instead of a path on the node: C(ca), C(cert), C(key) (a node without Python cannot receive a file through M(ansible.builtin.copy)). The module writes them, 0600 root, to C(registries-tls/<registry>/ca.crt), C(client.crt) and C(client.key) beside C(path), points the file at them, and removes the files there that no registry gives any more.", "The secret fields, and C(key), are never shown."}},
			{Name: "state", Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"C(absent) removes the file."}},
			{Name: "backup", Type: ansible.TypeBool, Default: false,
				Description: []string{"Keep a copy of the old file, named C(<file>.<pid>.<timestamp>~), before replacing or removing it."}},
		},
	},
	Examples: `
- name: Pull Docker Hub images through a local mirror that needs a login
  gitops.k3s_flux.k3s_registries:
    mirrors:
      docker.io:
        endpoint:
          - https://registry.example.internal:5000
    configs:
      registry.example.internal:5000:
        auth:
          username: k3s
          password: "{{ registry_password }}"
        tls:
          ca_file: /etc/ssl/certs/example-ca.pem
  register: registries
`,
	Returns: []ansible.Return{
		{Name: "path", Description: []string{"The file written or removed."}, Returned: "always", Type: "str", Sample: DefaultRegistriesPath},
		{Name: "checksum", Description: []string{"sha256 of the rendered content with the secret values left out, so that it cannot be used to test a guessed secret."}, Returned: "when state is present", Type: "str", Sample: "0b5d7c7b3f5a8d0e2c1f4a6b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"},
		{Name: "restart_needed", Description: []string{"Whether the content k3s reads changed, so the k3s service must restart to use it. A mode or owner fix alone needs no restart."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "backup_file", Description: []string{"The copy of the old file, when C(backup) made one."}, Returned: "changed and backup is true", Type: "str", Sample: "/etc/rancher/k3s/registries.yaml.4242.2026-12-02@10:00:00~"},
	},
}

type registriesArgs struct {
	Path    string         `json:"path"`
	Mirrors map[string]any `json:"mirrors"`
	Configs map[string]any `json:"configs"`
	State   string         `json:"state"`
	Backup  bool           `json:"backup"`
}

// registrySecretKeys are the fields of a config's auth that are secrets.
var registrySecretKeys = map[string]bool{"password": true, "token": true, "auth": true, "identity_token": true}

// The fields k3s reads, per level (k3s's registries.yaml schema).
var (
	mirrorKeys = []string{"endpoint", "rewrite"}
	configKeys = []string{"auth", "tls"}
	// wharfie's AuthConfig (pkg/registries/registries.go, getAuthenticator)
	// and k3s's containerd template read these four; a token key is ignored
	// by both, so pulls would go unauthenticated: refused (see fields).
	authKeys = []string{"username", "password", "auth", "identity_token"}
	tlsKeys  = []string{"ca_file", "cert_file", "key_file", "insecure_skip_verify", "ca", "cert", "key"}
)

// registrySecretValues lists the secret values in a raw configs dict, so
// they are masked even when validation fails: under auth, or one slip away
// from a secret field's name anywhere.
func registrySecretValues(configs any) []string {
	var out []string
	switch t := configs.(type) {
	case map[string]any:
		for key, v := range t {
			// configs.<registry>.auth is the block of credentials (a dict), its
			// auth key the secret itself: a username is no secret.
			if _, block := v.(map[string]any); isRegistrySecret(key) && !block {
				out = append(out, ansible.ScalarStrings(v)...)
			}
			out = append(out, registrySecretValues(v)...)
		}
	case []any:
		for _, e := range t {
			out = append(out, registrySecretValues(e)...)
		}
	}
	return out
}

func isRegistrySecret(key string) bool {
	for k := range registrySecretKeys {
		if key == k || ansible.OneSlip(key, k) {
			return true
		}
	}
	return false
}

// node is one level of the rendered document: a string, a bool, a list of
// strings, or a map of nodes.
type node = any

// validateRegistries checks mirrors and configs against k3s's schema and
// returns the document to render, and the TLS files given as content (path
// under dir to content), which the document points at.
func validateRegistries(mirrors, configs map[string]any, dir string) (map[string]node, map[string][]byte, error) {
	doc := map[string]node{}
	files := map[string][]byte{}
	if len(mirrors) > 0 {
		out := map[string]node{}
		for host, raw := range mirrors {
			entry, err := validateMirror("mirrors."+host, host, raw)
			if err != nil {
				return nil, nil, err
			}
			out[host] = entry
		}
		doc["mirrors"] = out
	}
	if len(configs) > 0 {
		out := map[string]node{}
		for host, raw := range configs {
			entry, err := validateRegistryConfig("configs."+host, host, raw, dir, files)
			if err != nil {
				return nil, nil, err
			}
			out[host] = entry
		}
		doc["configs"] = out
	}
	return doc, files, nil
}

// validateMirror checks one registry's mirror entry (at where) and returns
// it as registries.yaml holds it.
func validateMirror(where, host string, raw any) (map[string]node, error) {
	if err := checkRegistryHost(where, host); err != nil {
		return nil, err
	}
	m, err := fields(where, raw, mirrorKeys)
	if err != nil {
		return nil, err
	}
	entry := map[string]node{}
	if v, ok := m["endpoint"]; ok {
		endpoints, err := stringList(where+".endpoint", v)
		if err != nil {
			return nil, err
		}
		for i, e := range endpoints {
			u, err := url.Parse(e)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("%s.endpoint[%d]: expected an http or https URL such as https://registry.example.com:5000, got %q", where, i, e)
			}
			// containerd's hosts.toml takes a mirror's host and path only:
			// a login here would pull anonymously.
			if u.User != nil {
				return nil, fmt.Errorf("%s.endpoint[%d]: containerd does not use credentials in a mirror's URL (%s): give them in configs.%s.auth", where, i, u.Redacted(), u.Host)
			}
		}
		entry["endpoint"] = endpoints
	}
	if v, ok := m["rewrite"]; ok {
		rewrites, err := fields(where+".rewrite", v, nil)
		if err != nil {
			return nil, err
		}
		out := map[string]node{}
		for pattern, replacement := range rewrites {
			if _, err := regexp.Compile(pattern); err != nil {
				return nil, fmt.Errorf("%s.rewrite: %q is not a regular expression: %w", where, pattern, err)
			}
			s, ok := replacement.(string)
			if !ok {
				return nil, fmt.Errorf("%s.rewrite[%q]: expected a string, got %s", where, pattern, typeName(replacement))
			}
			out[pattern] = s
		}
		entry["rewrite"] = out
	}
	return entry, nil
}

// validateRegistryConfig checks one registry's config entry (at where) and returns
// it as registries.yaml holds it; the TLS files it names are added to files.
func validateRegistryConfig(where, host string, raw any, dir string, files map[string][]byte) (map[string]node, error) {
	if err := checkRegistryHost(where, host); err != nil {
		return nil, err
	}
	c, err := fields(where, raw, configKeys)
	if err != nil {
		return nil, err
	}
	entry := map[string]node{}
	if v, ok := c["auth"]; ok {
		auth, err := fields(where+".auth", v, authKeys)
		if err != nil {
			return nil, err
		}
		a := map[string]node{}
		for k, val := range auth {
			s, ok := val.(string)
			if !ok {
				// Not the value: it may be a secret.
				return nil, fmt.Errorf("%s.auth.%s: expected a string, got %s", where, k, typeName(val))
			}
			a[k] = s
		}
		entry["auth"] = a
	}
	if v, ok := c["tls"]; ok {
		t, err := validateTLS(where, host, v, dir, files)
		if err != nil {
			return nil, err
		}
		entry["tls"] = t
	}
	return entry, nil
}

// validateTLS checks a registry's tls entry (at where+".tls") and returns it
// with the paths of the files it is given as content, which are added to
// files.
func validateTLS(where, host string, v any, dir string, files map[string][]byte) (map[string]node, error) {
	tls, err := fields(where+".tls", v, tlsKeys)
	if err != nil {
		return nil, err
	}
	t := map[string]node{}
	for k, val := range tls {
		if k == "ca" || k == "cert" || k == "key" {
			continue // content: tlsFiles
		}
		if k == "insecure_skip_verify" {
			b, ok := val.(bool)
			if !ok {
				return nil, fmt.Errorf("%s.tls.insecure_skip_verify: expected true or false, got %s", where, typeName(val))
			}
			t[k] = b
			continue
		}
		s, ok := val.(string)
		if !ok || !filepath.IsAbs(s) {
			return nil, fmt.Errorf("%s.tls.%s: expected an absolute path on the node, got %v", where, k, val)
		}
		t[k] = s
	}
	given, err := tlsFiles(where, dir, host, t, tls)
	if err != nil {
		return nil, err
	}
	for p := range given {
		if _, taken := files[p]; taken {
			return nil, fmt.Errorf("%s.tls: its files would be %s, as another registry's: the two names differ only where a file name cannot hold the character", where, filepath.Dir(p))
		}
	}
	maps.Copy(files, given)
	if _, cert := t["cert_file"]; cert != (t["key_file"] != nil) {
		return nil, fmt.Errorf("%s.tls: a client certificate (cert or cert_file) and its key (key or key_file) go together", where)
	}
	return t, nil
}

// checkRegistryHost accepts host, host:port or "*".
func checkRegistryHost(where, host string) error {
	if host == "*" {
		return nil
	}
	u, err := url.Parse("//" + host)
	// The name becomes a directory for the TLS files: "..", "." and the like
	// would put them outside registries-tls.
	name := u.Hostname()
	if err != nil || u.Host != host || host == "" || strings.ContainsAny(host, "/ ") ||
		(net.ParseIP(name) == nil && !hostName.MatchString(name)) || (u.Port() == "" && strings.HasSuffix(host, ":")) {
		return fmt.Errorf("%s: expected a registry host such as docker.io or registry.example.com:5000 (no scheme, no path), got %q", where, host)
	}
	return nil
}

// hostName is a DNS name: labels of letters, digits, '-' and '_', not
// starting or ending with '-', joined by single dots.
var hostName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*$`)

// fields is raw as a dict whose keys are among allowed (any key when
// allowed is nil); an unknown key is named, with the one it is a slip from.
func fields(where string, raw any, allowed []string) (map[string]any, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		if raw == nil {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("%s: expected a dict, got %s", where, typeName(raw))
	}
	if allowed == nil {
		return m, nil
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			hint := ""
			if k == "token" && slices.Contains(allowed, "identity_token") {
				hint = " (k3s ignores it, and would pull without credentials: a registry token goes in identity_token, or as the password)"
			}
			for _, a := range allowed {
				if ansible.OneSlip(k, a) {
					hint = fmt.Sprintf(" (did you mean %s?)", a)
				}
			}
			return nil, fmt.Errorf("%s: unknown key %q%s; k3s reads %s", where, k, hint, strings.Join(allowed, ", "))
		}
	}
	return m, nil
}

func stringList(where string, raw any) ([]string, error) {
	switch v := raw.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: expected a string, got %s", where, i, typeName(e))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: expected a list of URLs, got %s", where, typeName(raw))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a dict"
	}
	return fmt.Sprintf("%T", v)
}

// encodeNested renders a document of maps, lists of strings, strings,
// booleans and integers, keys sorted, two spaces per level, lists in block
// style (config.yaml is its flat case).
func encodeNested(b *strings.Builder, doc map[string]node, indent string) {
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(indent + yamlKey(k) + ":")
		switch v := doc[k].(type) {
		case map[string]node:
			if len(v) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteString("\n")
			encodeNested(b, v, indent+"  ")
		case []string:
			if len(v) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteString("\n")
			for _, item := range v {
				b.WriteString(indent + "  - " + yamlString(item) + "\n")
			}
		case bool:
			b.WriteString(" " + strconv.FormatBool(v) + "\n")
		case int:
			b.WriteString(" " + strconv.Itoa(v) + "\n")
		case string:
			b.WriteString(" " + yamlString(v) + "\n")
		}
	}
}

// yamlKey writes a key plain when it is safe (docker.io), quoted otherwise
// (a regular expression, "*", a host with a port).
func yamlKey(k string) string {
	if plainSafe(k) && !strings.Contains(k, ":") {
		return k
	}
	return strconv.Quote(k)
}

func renderRegistries(doc map[string]node) []byte {
	var b strings.Builder
	b.WriteString("# Written by gitops.k3s_flux.k3s_registries; k3s reads it when it starts.\n")
	encodeNested(&b, doc, "")
	return []byte(b.String())
}

// registrySecretLine matches "  <secret key>: <value>" at any depth.
var registrySecretLine = regexp.MustCompile(`^(\s*)(` + strings.Join(slices.Sorted(maps.Keys(registrySecretKeys)), "|") + `):[ \t]+(\S.*)$`)

// redactRegistries replaces the secret values in a registries file's text;
// mark gets each one's slot (its parent keys, as registrySecret names it).
// It works on lines, so that a hand-edited file is shown as it is.
func redactRegistries(content string, mark func(slot string) string) string {
	lines := strings.SplitAfter(content, "\n")
	var parents []string // the keys opening the blocks above, by depth
	for i, line := range lines {
		body := strings.TrimRight(line, "\n")
		nl := line[len(body):]
		trimmed := strings.TrimSpace(body)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "-") {
			continue
		}
		depth := (len(body) - len(strings.TrimLeft(body, " "))) / 2
		if depth < len(parents) {
			parents = parents[:depth]
		}
		if m := registrySecretLine.FindStringSubmatch(body); m != nil {
			slot := strings.Join(append(append([]string{}, parents...), m[2]), "/")
			lines[i] = m[1] + m[2] + ": " + mark(slot+"#1") + nl
			continue
		}
		if key, rest, ok := splitKey(trimmed); ok && strings.TrimSpace(rest) == "" {
			for len(parents) < depth {
				parents = append(parents, "")
			}
			parents = append(parents[:depth], key)
		}
	}
	return strings.Join(lines, "")
}

// registrySecret: a credential key of a registry's auth at any depth; its
// slot is the keys above it (list positions left out, as redactRegistries
// skips list items).
func registrySecret(path []string) (string, bool) {
	if len(path) == 0 || !registrySecretKeys[path[len(path)-1]] {
		return "", false
	}
	var keys []string
	for _, p := range path {
		if !strings.HasPrefix(p, "[") {
			keys = append(keys, p)
		}
	}
	return strings.Join(keys, "/"), true
}

// splitKey splits "key: rest" where key may be double-quoted (a host with
// a port, a regular expression).
func splitKey(line string) (key, rest string, ok bool) {
	if strings.HasPrefix(line, `"`) {
		end := closingQuote(line)
		if end < 0 || end+1 >= len(line) || line[end+1] != ':' {
			return "", "", false
		}
		return parseScalar(line[:end+1]), line[end+2:], true
	}
	key, rest, ok = strings.Cut(line, ":")
	return strings.TrimSpace(key), rest, ok
}

// RunRegistries is k3s_registries' body.
func RunRegistries(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	c, err := ConvergeRegistries(ctx, req)
	return c.Result, err
}

// ConvergeRegistries is k3s_registries' body, its outcome typed.
func ConvergeRegistries(_ context.Context, req *ansible.Request) (Converged, error) {
	var a registriesArgs
	if err := req.Decode(&a); err != nil {
		return Converged{}, err
	}
	res := &ansible.Result{}
	c := Converged{Result: res}
	res.Set("path", a.Path)
	res.Set("restart_needed", false)
	var content []byte
	var doc map[string]node
	var files map[string][]byte
	if a.State == "present" {
		var err error
		doc, files, err = validateRegistries(a.Mirrors, a.Configs, tlsDir(a.Path))
		if err != nil {
			return c, err
		}
		content = renderRegistries(doc)
		sum := sha256.Sum256([]byte(redactRegistries(string(content), func(string) string { return ansible.Redacted })))
		res.Set("checksum", hex.EncodeToString(sum[:]))
	}
	// The TLS files before the file that points at them.
	tls, err := convergeTLS(req.CheckMode, tlsDir(a.Path), files)
	if err != nil {
		return c, err
	}
	if c.RestartNeeded, err = converge(req, res, a.Path, content, a.State == "present", a.Backup, registriesRedactor); err != nil {
		return c, err
	}
	res.Changed = res.Changed || tls.changed
	if tls.restart {
		c.RestartNeeded = true
		res.Set("restart_needed", true)
	}
	res.Diff = append(res.Diff, tls.diffs...)
	return c, nil
}
