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
	Backup      bool   `json:"backup"`
}

func run(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if a.Server != "" {
		if err := checkServer(a.Server); err != nil {
			return nil, err
		}
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
	content, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the kubeconfig: %w", err)
	}

	dest, err := target(a.Dest)
	if err != nil {
		return nil, err
	}
	res := &ansible.Result{}
	res.Set("dest", dest)
	res.Set("context", cfg.CurrentContext)
	res.Set("server", currentServer(cfg))

	old, mode, exists, err := readDest(dest)
	if err != nil {
		return res, err
	}
	if exists {
		if prev, err := clientcmd.Load(old); err == nil {
			addSecrets(req, prev)
		}
	}
	contentChanged := !exists || !bytes.Equal(old, content)
	res.Changed = contentChanged || mode != fileMode
	if contentChanged {
		before := ""
		if exists {
			before = redact(string(old))
		}
		res.Diff = []ansible.Diff{{Before: before, After: redact(string(content)), BeforeHeader: dest, AfterHeader: dest}}
	}
	if !res.Changed || req.CheckMode {
		return res, nil
	}
	if !contentChanged {
		if err := os.Chmod(dest, fileMode); err != nil {
			return res, fmt.Errorf("chmod %s: %w", dest, err)
		}
		return res, nil
	}
	if exists && a.Backup {
		name, err := atomicfile.Backup(dest, old, fileMode)
		if err != nil {
			return res, err
		}
		res.Set("backup_file", name)
	}
	dir := filepath.Dir(dest)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A directory made here is private, and kept out of git: it is often
		// made inside the user's GitOps repository (seed 000's ansible/.generated),
		// where a `git add -A` would publish cluster-admin credentials.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return res, fmt.Errorf("create directory %s: %w", dir, err)
		}
		ignore := filepath.Join(dir, ".gitignore")
		if err := atomicfile.Write(ignore, strings.NewReader(gitIgnore), 0o600); err != nil {
			return res, err
		}
		res.Set("ignore_file", ignore)
	}
	return res, atomicfile.Write(dest, bytes.NewReader(content), fileMode)
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
