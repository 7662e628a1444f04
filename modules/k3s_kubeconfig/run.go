package k3skubeconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
	"github.com/gitops-k3s-flux/k3s_flux/internal/yamlredact"
)

// fileMode is the only mode a kubeconfig gets: it holds the admin's key.
const fileMode fs.FileMode = 0o600

// k3sName is what k3s calls the cluster, user and context it writes.
const k3sName = "default"

type args struct {
	Content     string `json:"content"`
	Dest        string `json:"dest"`
	Server      string `json:"server"`
	ClusterName string `json:"cluster_name"`
	Merge       bool   `json:"merge"`
	State       string `json:"state"`
	Backup      bool   `json:"backup"`
}

func run(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if a.State == "absent" && !a.Merge {
		return nil, errors.New("state=absent takes only the entries named cluster_name out of a kubeconfig (merge: true), never a whole file")
	}
	if a.Server != "" {
		if err := checkServer(a.Server); err != nil {
			return nil, err
		}
	}
	dest, err := target(a.Dest)
	if err != nil {
		return nil, err
	}
	old, mode, exists, err := readDest(dest)
	if err != nil {
		return nil, err
	}
	d := destFile{dest, old, mode, exists}
	plan := planReplace
	if a.Merge {
		plan = planMerge
	}
	p, err := plan(req, a, d)
	if err != nil {
		return nil, err
	}
	if !p.res.Changed || req.CheckMode {
		return p.res, nil
	}
	return p.res, p.apply()
}

// writePlan is what a run does to dest, decided before anything is
// written: the file's new content (or only its mode fixed) and a backup of
// the old one; res is the result, with its diff.
type writePlan struct {
	destFile
	content        []byte
	contentChanged bool
	backup         bool
	res            *ansible.Result
}

// planReplace writes the admin kubeconfig given as the whole of dest.
func planReplace(req *ansible.Request, a args, d destFile) (writePlan, error) {
	if d.exists {
		if prev, err := clientcmd.Load(d.old); err == nil {
			addSecrets(req, prev)
		}
	}
	cfg, err := loadContent(req, a)
	if err != nil {
		return writePlan{}, err
	}
	content, err := clientcmd.Write(*cfg)
	if err != nil {
		return writePlan{}, fmt.Errorf("encode the kubeconfig: %w", err)
	}
	p := writePlan{destFile: d, content: content, contentChanged: !d.exists || !bytes.Equal(d.old, content), backup: d.exists && a.Backup, res: result(d.path, cfg)}
	p.res.Changed = p.contentChanged || d.mode != fileMode
	if p.contentChanged {
		shown := ""
		if d.exists {
			shown = redact(string(d.old))
		}
		p.res.Diff = []ansible.Diff{{Before: shown, After: redact(string(content)), BeforeHeader: d.path, AfterHeader: d.path}}
	}
	return p, nil
}

// destFile is what was at dest when the module started.
type destFile struct {
	path   string
	old    []byte
	mode   fs.FileMode
	exists bool
}

// planMerge adds (or with state=absent removes) the entries named
// cluster_name in the user's kubeconfig at dest, and nothing else: a file
// that is no kubeconfig, or an entry of that name this module did not
// write, is refused before anything is written. The file is backed up
// before the first merge into it; the diff shows only those entries.
func planMerge(req *ansible.Request, a args, d destFile) (writePlan, error) {
	prev := clientcmdapi.NewConfig()
	if d.exists {
		if err := kubeconfigShape(d.old); err != nil {
			return writePlan{}, fmt.Errorf("dest %s is not a kubeconfig: %w; nothing was changed", d.path, err)
		}
		loaded, err := clientcmd.Load(d.old)
		if err != nil {
			return writePlan{}, fmt.Errorf("dest %s is not a kubeconfig (%w); nothing was changed", d.path, err)
		}
		prev = loaded
		addSecrets(req, prev)
	}
	out, warnings, err := mergePlan(req, a, prev)
	if err != nil {
		return writePlan{}, fmt.Errorf("dest %s: %w", d.path, err)
	}
	res := result(d.path, out)
	res.Warnings = warnings
	// Both as they would be written: a merge that adds nothing changes
	// nothing, however the file was formatted.
	before, err := clientcmd.Write(*prev)
	if err != nil {
		return writePlan{}, fmt.Errorf("encode %s: %w", d.path, err)
	}
	content, err := clientcmd.Write(*out)
	if err != nil {
		return writePlan{}, fmt.Errorf("encode the kubeconfig: %w", err)
	}
	contentChanged := !bytes.Equal(before, content) || (!d.exists && a.State == "present")
	res.Changed = contentChanged || (a.State == "present" && d.exists && d.mode != fileMode)
	if contentChanged {
		if res.Diff, err = ownDiff(d.path, prev, out, a.ClusterName); err != nil {
			return writePlan{}, err
		}
	}
	// The first merge into a file keeps it as it was: the user's own.
	backup := d.exists && len(bytes.TrimSpace(d.old)) > 0 && (a.Backup || !ownsAny(prev, a.ClusterName))
	return writePlan{destFile: d, content: content, contentChanged: contentChanged, backup: backup, res: res}, nil
}

// mergePlan is prev with the entries named cluster_name merged from content,
// or taken out with state=absent; and the warnings to give.
func mergePlan(req *ansible.Request, a args, prev *clientcmdapi.Config) (*clientcmdapi.Config, []string, error) {
	if a.State == "absent" {
		out, warnings := withoutOurs(prev, a.ClusterName)
		return out, warnings, nil
	}
	ours, err := loadContent(req, a)
	if err != nil {
		return nil, nil, err
	}
	return merged(prev, ours, a.ClusterName)
}

// ownDiff shows the entries named name before and after, redacted.
func ownDiff(dest string, prev, out *clientcmdapi.Config, name string) ([]ansible.Diff, error) {
	before, err := ownView(prev, name)
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", dest, err)
	}
	after, err := ownView(out, name)
	if err != nil {
		return nil, fmt.Errorf("show the kubeconfig: %w", err)
	}
	return []ansible.Diff{{Before: redact(before), After: redact(after), BeforeHeader: dest, AfterHeader: dest}}, nil
}

// result holds what every run returns: the file and cfg's current context.
func result(dest string, cfg *clientcmdapi.Config) *ansible.Result {
	res := &ansible.Result{}
	res.Set("dest", dest)
	res.Set("context", cfg.CurrentContext)
	res.Set("server", currentServer(cfg))
	return res
}

// loadContent is the admin kubeconfig given, pointed at server and renamed.
func loadContent(req *ansible.Request, a args) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load([]byte(a.Content))
	if err != nil {
		return nil, fmt.Errorf("content is not a kubeconfig: %w", err)
	}
	addSecrets(req, cfg)
	if len(cfg.Clusters) == 0 {
		return nil, errors.New("content is not a kubeconfig: it has no clusters (expected the admin kubeconfig k3s writes on a server)")
	}
	rewrite(cfg, a.Server, a.ClusterName)
	return cfg, nil
}

// apply writes the content to dest (or only fixes its mode), keeping a
// backup and making a missing directory private and ignored by git.
func (p writePlan) apply() error {
	res, dest, old, content := p.res, p.path, p.old, p.content
	if !p.contentChanged {
		if err := os.Chmod(dest, fileMode); err != nil {
			return fmt.Errorf("chmod %s: %w", dest, err)
		}
		return nil
	}
	if p.backup {
		name, err := atomicfile.Backup(dest, old, fileMode)
		if err != nil {
			return err
		}
		res.Set("backup_file", name)
	}
	dir := filepath.Dir(dest)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A directory made here is private, and kept out of git: it is often
		// made inside the user's GitOps repository (seed 000's ansible/.generated),
		// where a `git add -A` would publish cluster-admin credentials.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
		ignore := filepath.Join(dir, ".gitignore")
		if err := atomicfile.Write(ignore, strings.NewReader(gitIgnore), 0o600); err != nil {
			return err
		}
		res.Set("ignore_file", ignore)
	}
	return atomicfile.Write(dest, bytes.NewReader(content), fileMode)
}

// gitIgnore keeps everything in a directory the module made out of git.
const gitIgnore = "# Written by gitops.k3s_flux with the cluster's admin kubeconfig: what is here holds\n# credentials and must never be committed.\n*\n"

// checkServer accepts an https URL with a host and nothing after the port.
func checkServer(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("server %q is not an API endpoint: expected https://<host>:<port>, as https://10.0.0.11:6443", server)
	}
	return nil
}

// rewrite points every cluster at server and renames k3s's "default" to
// name, each when given.
func rewrite(cfg *clientcmdapi.Config, server, name string) {
	if server != "" {
		for _, c := range cfg.Clusters {
			c.Server = strings.TrimSuffix(server, "/")
		}
	}
	if name == "" || name == k3sName {
		return
	}
	renameKey(cfg.Clusters, name)
	renameKey(cfg.AuthInfos, name)
	renameKey(cfg.Contexts, name)
	for _, c := range cfg.Contexts {
		if c.Cluster == k3sName {
			c.Cluster = name
		}
		if c.AuthInfo == k3sName {
			c.AuthInfo = name
		}
	}
	if cfg.CurrentContext == k3sName {
		cfg.CurrentContext = name
	}
}

// renameKey moves m["default"] to m[name], unless name is taken.
func renameKey[T any](m map[string]T, name string) {
	v, ok := m[k3sName]
	if _, taken := m[name]; !ok || taken {
		return
	}
	delete(m, k3sName)
	m[name] = v
}

func currentServer(cfg *clientcmdapi.Config) string {
	if c, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if cl, ok := cfg.Clusters[c.Cluster]; ok {
			return cl.Server
		}
	}
	return ""
}

// addSecrets masks the kubeconfig's credentials in every result: the
// values, and the key data also as the base64 a kubeconfig file holds.
func addSecrets(req *ansible.Request, cfg *clientcmdapi.Config) {
	for _, u := range cfg.AuthInfos {
		req.AddSecret(u.Token)
		req.AddSecret(u.Password)
		req.AddSecret(string(u.ClientKeyData))
		if len(u.ClientKeyData) > 0 {
			req.AddSecret(base64.StdEncoding.EncodeToString(u.ClientKeyData))
		}
		if u.AuthProvider != nil {
			for k, v := range u.AuthProvider.Config {
				if secretKeys[k] {
					req.AddSecret(v)
				}
			}
		}
		if u.Exec != nil {
			for _, env := range u.Exec.Env { // the diff hides every value; a named secret is masked too
				if ansible.SecretName(env.Name) {
					req.AddSecret(env.Value)
				}
			}
			for _, v := range execArgSecrets(u.Exec.Args) {
				req.AddSecret(v)
			}
		}
	}
}

// execArgSecrets are the values an exec plugin's args give to flags whose
// name says they hold a secret, as kubelogin's --oidc-client-secret=...
// (the diff hides every arg).
func execArgSecrets(args []string) []string {
	var out []string
	for i, arg := range args {
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		flag, value, found := strings.Cut(arg, "=")
		switch {
		case !ansible.SecretName(flag):
		case found:
			out = append(out, value)
		case i+1 < len(args):
			out = append(out, args[i+1])
		}
	}
	return out
}

// secretKeys are the kubeconfig fields whose values are credentials: a
// user's, and an auth-provider's tokens (client-go's clientcmd api).
var secretKeys = map[string]bool{"client-key-data": true, "token": true, "password": true,
	"id-token": true, "refresh-token": true, "access-token": true, "client-secret": true}

// secretField is a credential's place in a kubeconfig: a secret key at any
// depth, the value of an exec plugin's environment variable, or its args
// (a client secret is often given there).
func secretField(path []string) (string, bool) {
	n := len(path)
	if n == 0 {
		return "", false
	}
	slot := strings.Join(path, ".")
	if secretKeys[path[n-1]] || (n >= 2 && path[n-1] == "args" && path[n-2] == "exec") {
		return slot, true
	}
	return slot, n >= 3 && path[n-1] == "value" && path[n-3] == "env" && strings.HasPrefix(path[n-2], "[")
}

// redactLines replaces the values of the secret keys a line sets, keeping
// the file's text (a file this module wrote has nothing else).
func redactLines(text string, mark func(string) string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		trimmed := strings.TrimPrefix(strings.TrimSpace(line), "- ")
		if k, v, found := strings.Cut(trimmed, ":"); found && secretKeys[k] && strings.TrimSpace(v) != "" {
			lines[i] = line[:strings.Index(line, k)] + k + ": " + mark("")
		}
	}
	return strings.Join(lines, "\n")
}

// redact replaces the credentials in a kubeconfig's text, for the diff,
// whatever its style (an existing file may be hand-edited): see yamlredact.
func redact(text string) string {
	return yamlredact.Redact(text, redactLines, secretField, func(string) string { return ansible.Redacted })
}

// target is dest, or the file a link at dest points to.
func target(dest string) (string, error) {
	resolved, err := filepath.EvalSymlinks(dest)
	switch {
	case err == nil:
		return resolved, nil
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(dest); lerr == nil {
			return "", fmt.Errorf("dest %s is a link to a missing file", dest)
		}
		return dest, nil
	default:
		return "", fmt.Errorf("dest %s: %w", dest, err)
	}
}

// readDest reads what is at dest: its content and mode, if it exists.
func readDest(dest string) (content []byte, mode fs.FileMode, exists bool, err error) {
	info, err := os.Stat(dest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("inspect %s: %w", dest, err)
	}
	if !info.Mode().IsRegular() {
		return nil, 0, false, fmt.Errorf("dest %s is not a regular file (%s)", dest, info.Mode().Type())
	}
	content, err = os.ReadFile(dest)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s: %w", dest, err)
	}
	return content, info.Mode().Perm(), true, nil
}
