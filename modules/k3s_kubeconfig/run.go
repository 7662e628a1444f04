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
	var prev *clientcmdapi.Config
	if exists {
		prev, err = clientcmd.Load(old)
		if err == nil {
			addSecrets(req, prev)
		} else if a.Merge {
			return nil, fmt.Errorf("dest %s is not a kubeconfig (%v): nothing was changed", dest, err)
		}
	}
	cfg, err := desired(req, a, prev)
	if err != nil {
		return nil, err
	}
	res := &ansible.Result{}
	res.Set("dest", dest)
	res.Set("context", cfg.CurrentContext)
	res.Set("server", currentServer(cfg))
	if a.State == "absent" && (prev == nil || !holds(prev, a.ClusterName)) {
		return res, nil
	}
	content, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the kubeconfig: %w", err)
	}
	before := old
	if a.Merge && prev != nil {
		// What the file says, as it would be written: a merge that adds
		// nothing changes nothing, however the file was formatted.
		if before, err = clientcmd.Write(*prev); err != nil {
			return nil, fmt.Errorf("encode %s: %w", dest, err)
		}
	}
	contentChanged := !exists || !bytes.Equal(before, content)
	res.Changed = contentChanged || mode != fileMode
	if contentChanged {
		shown := ""
		if exists {
			shown = redact(string(before))
		}
		res.Diff = []ansible.Diff{{Before: shown, After: redact(string(content)), BeforeHeader: dest, AfterHeader: dest}}
	}
	if !res.Changed || req.CheckMode {
		return res, nil
	}
	return res, apply(res, dest, old, content, exists, contentChanged, a.Backup)
}

// desired is the kubeconfig to write: content, pointed and renamed, whole
// or merged into prev; or prev without the entries named cluster_name.
func desired(req *ansible.Request, a args, prev *clientcmdapi.Config) (*clientcmdapi.Config, error) {
	if a.State == "absent" {
		if prev == nil {
			return clientcmdapi.NewConfig(), nil
		}
		return without(prev, a.ClusterName), nil
	}
	cfg, err := clientcmd.Load([]byte(a.Content))
	if err != nil {
		return nil, fmt.Errorf("content is not a kubeconfig: %w", err)
	}
	addSecrets(req, cfg)
	if len(cfg.Clusters) == 0 {
		return nil, errors.New("content is not a kubeconfig: it has no clusters (expected the admin kubeconfig k3s writes on a server)")
	}
	rewrite(cfg, a.Server, a.ClusterName)
	if a.Merge && prev != nil {
		return merged(prev, cfg, a.ClusterName)
	}
	return cfg, nil
}

// merged is prev with ours's cluster, user and context named name added
// or replaced; the current context becomes name only where prev has none.
func merged(prev, ours *clientcmdapi.Config, name string) (*clientcmdapi.Config, error) {
	ctx, ok := ours.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("content has no context %q to merge (k3s names its own %q)", name, k3sName)
	}
	out := prev.DeepCopy()
	out.Contexts[name] = ctx
	out.Clusters[name] = ours.Clusters[ctx.Cluster]
	out.AuthInfos[name] = ours.AuthInfos[ctx.AuthInfo]
	ctx.Cluster, ctx.AuthInfo = name, name
	if out.CurrentContext == "" {
		out.CurrentContext = name
	}
	return out, nil
}

// holds says whether cfg has a cluster, user or context named name.
func holds(cfg *clientcmdapi.Config, name string) bool {
	_, cluster := cfg.Clusters[name]
	_, user := cfg.AuthInfos[name]
	_, context := cfg.Contexts[name]
	return cluster || user || context
}

// without is cfg without the cluster, user and context named name.
func without(cfg *clientcmdapi.Config, name string) *clientcmdapi.Config {
	out := cfg.DeepCopy()
	delete(out.Clusters, name)
	delete(out.AuthInfos, name)
	delete(out.Contexts, name)
	if out.CurrentContext == name {
		out.CurrentContext = ""
	}
	return out
}

// apply writes content to dest (or only fixes its mode), keeping a backup
// and making a missing directory private and ignored by git.
func apply(res *ansible.Result, dest string, old, content []byte, exists, contentChanged, backup bool) error {
	if !contentChanged {
		if err := os.Chmod(dest, fileMode); err != nil {
			return fmt.Errorf("chmod %s: %w", dest, err)
		}
		return nil
	}
	if exists && backup {
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
		}
	}
}

// secretKeys are the kubeconfig fields whose values are credentials: a
// user's, and an auth-provider's tokens (client-go's clientcmd api).
var secretKeys = map[string]bool{"client-key-data": true, "token": true, "password": true,
	"id-token": true, "refresh-token": true, "access-token": true, "client-secret": true}

// secretField is a credential's place in a kubeconfig: a secret key at any
// depth, or the value of an exec plugin's environment variable.
func secretField(path []string) (string, bool) {
	n := len(path)
	if n == 0 {
		return "", false
	}
	slot := strings.Join(path, ".")
	if secretKeys[path[n-1]] {
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
