// Package k3sconfig is the modules that render k3s's files on a node:
// k3s_config (config.yaml, or a drop-in) and k3s_registries
// (registries.yaml). Their binary is cmd/k3s_config; module k3s_node
// runs them in its own process too, before it installs or restarts k3s (one
// command on the node per task).
package k3sconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3spaths"
)

// DefaultPath is where k3s reads its config.
const DefaultPath = k3spaths.Config

// NodeIDFile is where k3s keeps the suffix with-node-id adds to the node
// name, made at its first start (a variable for the tests).
var NodeIDFile = k3spaths.NodeID

// Module is k3s_config: config.yaml from a dict of flags plus the keys it owns.
var Module = &ansible.Module{
	Name:             "k3s_config",
	ShortDescription: "Render the k3s config file (config.yaml or a config.yaml.d drop-in) on a node",
	Description: []string{
		"Writes C(/etc/rancher/k3s/config.yaml), or a drop-in under C(config.yaml.d/), from a dict of k3s flags plus the keys the module owns (C(token), C(server), C(cluster_init)).",
		"Every key is checked against the flags of the node's C(role) (k3s server or agent), with a suggestion for a misspelt key; values are checked against the flag's type, and the YAML traps that turn C(0644) into 420 or C(no) into false are caught.",
		"The file is canonical (keys sorted, lists in block style), written atomically, mode 0600 and owned by root, because it holds the cluster token.",
		"A Go binary: the node needs no Python.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Platforms: "linux",
	Notes: []string{
		"k3s reads config.yaml first, then each C(config.yaml.d/*.yaml) drop-in in lexical order; a plain key in a later file replaces the earlier value and a C(key+) key appends to a list flag.",
		"A server-only key on an agent fails here, because C(k3s agent) refuses to start with it; an agent-only key on a server fails too, because C(k3s server) would silently drop it.",
		"In diffs the values of C(token) and of the secret flags (agent-token, etcd-s3-access-key, etcd-s3-secret-key, etcd-s3-session-token, datastore-endpoint, vpn-auth) are replaced by C(<redacted>), and on the new side by C(<redacted, changed>) where the value changed; nothing derived from a secret is ever shown. A file already on the node is parsed to find its secrets whatever its style (flow style, JSON, a block scalar, the value on the line after its key): shown as written when the line-by-line redaction leaves none of them in it, else rendered again from the parse with each replaced, and as C(<not shown: does not parse>) when it does not parse. They are masked in the result like a no_log option, and so is the password of a URL anywhere in the config or the file (C(etcd-s3-proxy)'s), in every form: as written, percent-decoded and percent-encoded.",
		"k3s does not reload its config: act on C(restart_needed) by restarting the k3s service.",
	},
	Spec: ansible.Spec{
		Options: []ansible.Option{
			{Name: "path", Type: ansible.TypePath, Default: DefaultPath,
				Description: []string{"The k3s config file. With C(drop_in), the drop-in goes in the C(<path>.d/) directory beside it."}},
			{Name: "drop_in",
				Description: []string{"Write the drop-in C(<path>.d/<drop_in>.yaml) instead of C(path) itself, for example C(50-ansible).", "k3s reads drop-ins in lexical order after the main file, so start the name with two digits."}},
			{Name: "role", Required: true, Choices: []any{"server", "agent"},
				Description: []string{"Whether this node runs C(k3s server) or C(k3s agent); it decides which flags C(config) may hold."}},
			{Name: "config", Type: ansible.TypeDict, Default: map[string]any{}, NoLogValues: configSecretValues,
				Description: []string{"k3s flags as keys without the leading dashes, for example C(node-label), C(tls-san), C(write-kubeconfig-mode).", "A key ending in C(+) appends to a list flag (useful in drop-ins). A key whose value is null is left out.", "List flags take YAML lists; for the flags k3s splits on commas (tls-san, node-ip, disable, ...) a comma-separated string is split the same way."}},
			{Name: "token", NoLog: true,
				Description: []string{"The cluster token (k3s C(token)): the shared secret servers and agents join with. Never shown in output or diffs."}},
			{Name: "server",
				Description: []string{"URL of an existing server to join (k3s C(server)), such as C(https://10.0.0.10:6443). Set on agents, and on the second and later servers of an HA cluster."}},
			{Name: "cluster_init", Type: ansible.TypeBool,
				Description: []string{"Start a new HA cluster with embedded etcd on this server (k3s C(cluster-init)). Set on the first server only."}},
			{Name: "state", Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"C(absent) removes the file (for example a drop-in no longer wanted)."}},
			{Name: "backup", Type: ansible.TypeBool, Default: false,
				Description: []string{"Keep a copy of the old file, named C(<file>.<pid>.<timestamp>~), before replacing or removing it."}},
		},
		MutuallyExclusive: [][]string{{"server", "cluster_init"}},
	},
	Examples: `
- name: Configure the first server of an HA cluster
  gitops.k3s_flux.k3s_config:
    role: server
    token: "{{ k3s_token }}"
    cluster_init: true
    config:
      write-kubeconfig-mode: "0600"
      tls-san:
        - k8s.example.internal
        - 10.0.0.10
      disable:
        - traefik
      node-label:
        - topology.kubernetes.io/zone=rack-a
  register: k3s_config
  notify: Restart k3s

- name: Join a worker
  gitops.k3s_flux.k3s_config:
    role: agent
    server: https://10.0.0.10:6443
    token: "{{ k3s_token }}"
    config:
      node-taint:
        - dedicated=storage:NoSchedule

- name: Add labels in a drop-in, keeping the main file as it is
  gitops.k3s_flux.k3s_config:
    role: agent
    drop_in: 50-labels
    config:
      node-label+:
        - disk=ssd
`,
	Returns: []ansible.Return{
		{Name: "path", Description: []string{"The file written or removed."}, Returned: "always", Type: "str", Sample: DefaultPath},
		{Name: "checksum", Description: []string{"sha256 of the rendered content (what the file holds after the task) with the values of C(token) and the secret flags left out, so that it cannot be used to test a guessed secret. A changed secret shows in C(changed) and C(restart_needed), not here."}, Returned: "when state is present", Type: "str", Sample: "0b5d7c7b3f5a8d0e2c1f4a6b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"},
		{Name: "restart_needed", Description: []string{"Whether the content k3s reads changed, so the k3s service must restart to use it. A mode or owner fix alone needs no restart."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "node_name", Description: []string{"The name k3s registers this node under: C(node-name) from C(config), else the host name in lower case; with C(with-node-id), followed by C(-) and the id k3s keeps in C(/etc/rancher/node/id). Empty when C(with-node-id) is set and k3s has not made that id yet (before its first start)."}, Returned: "when state is present", Type: "str", Sample: "node1"},
		{Name: "backup_file", Description: []string{"The copy of the old file, when C(backup) made one."}, Returned: "changed and backup is true", Type: "str", Sample: "/etc/rancher/k3s/config.yaml.4242.2026-12-02@10:00:00~"},
	},
}

type args struct {
	Path        string         `json:"path"`
	DropIn      string         `json:"drop_in"`
	Role        string         `json:"role"`
	Config      map[string]any `json:"config"`
	Token       string         `json:"token"`
	Server      string         `json:"server"`
	ClusterInit *bool          `json:"cluster_init"`
	State       string         `json:"state"`
	Backup      bool           `json:"backup"`
}

// isFileName accepts a plain file name: letters, digits, '.', '_', '-',
// not starting with a dot or dash.
func isFileName(s string) bool {
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._-", c)) {
			return false
		}
	}
	return s != ""
}

// targetPath is the file the task manages: path, or the drop-in beside it.
func targetPath(a args) (string, error) {
	if a.DropIn == "" {
		return a.Path, nil
	}
	if !isFileName(a.DropIn) {
		return "", fmt.Errorf("drop_in must be a plain file name such as 50-ansible (letters, digits, '.', '_', '-'), got %q", a.DropIn)
	}
	name := a.DropIn
	if ext := strings.ToLower(filepath.Ext(name)); ext != ".yaml" && ext != ".yml" {
		name += ".yaml" // k3s reads only .yaml and .yml drop-ins
	}
	return filepath.Join(a.Path+".d", name), nil
}

// Converged is what k3s_config or k3s_registries did on the node: the
// module's result, and what module k3s_node acts on, typed.
type Converged struct {
	Result *ansible.Result
	// RestartNeeded says the content k3s reads changed.
	RestartNeeded bool
	// NodeName is the name k3s registers the node under (k3s_config with
	// state present; "" when unknown).
	NodeName string
}

// Run is k3s_config's body.
func Run(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	c, err := Converge(ctx, req)
	return c.Result, err
}

// Converge is k3s_config's body, its outcome typed.
func Converge(_ context.Context, req *ansible.Request) (Converged, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return Converged{}, err
	}
	path, err := targetPath(a)
	if err != nil {
		return Converged{}, err
	}
	res := &ansible.Result{}
	c := Converged{Result: res}
	res.Set("path", path)
	res.Set("restart_needed", false)

	var content []byte
	if a.State == "present" {
		content, err = render(desired{Role: a.Role, Config: a.Config, Token: a.Token, Server: a.Server, ClusterInit: a.ClusterInit})
		if err != nil {
			return c, err
		}
		// Of the content without its secrets: a checksum of the token's
		// file would let a CI log's reader test a guessed token.
		sum := sha256.Sum256([]byte(redact(string(content))))
		res.Set("checksum", hex.EncodeToString(sum[:]))
		c.NodeName = NodeName(a.Config, os.Hostname, readNodeID)
		res.Set("node_name", c.NodeName)
	}
	c.RestartNeeded, err = converge(req, res, path, content, a.State == "present", a.Backup, configRedactor)
	return c, err
}

// converge makes the file at path hold content (present) or be gone, as
// both node file modules do: changed and restart_needed from the content
// (a mode or owner fix alone changes nothing k3s reads), the diff through
// redact, nothing written in check mode, a backup when asked, the write
// atomic and 0600. It returns whether the content changed.
func converge(req *ansible.Request, res *ansible.Result, path string, content []byte, present, backup bool, redact redactor) (bool, error) {
	cur, err := readCurrent(path)
	if err != nil {
		return false, err
	}
	contentChanged := cur.Exists
	if present {
		contentChanged = !cur.Exists || !bytes.Equal(cur.Content, content)
	}
	// A URL's password is no key's value: both sides' are masked in all.
	for _, pw := range ansible.URLPasswordsIn([]any{string(cur.Content), string(content)}) {
		req.AddSecret(pw)
	}
	res.Changed = contentChanged || (present && cur.WrongPerm)
	res.Set("restart_needed", contentChanged)
	if contentChanged {
		before, after := redactPairWith(redact, string(cur.Content), string(content))
		res.Diff = []ansible.Diff{{Before: before, After: after, BeforeHeader: path, AfterHeader: path}}
	}
	if !res.Changed || req.CheckMode {
		return contentChanged, nil
	}
	if contentChanged && cur.Exists && backup {
		name, err := atomicfile.Backup(path, cur.Content, fileMode)
		if err != nil {
			return contentChanged, err
		}
		res.Set("backup_file", name)
	}
	switch {
	case !present:
		return contentChanged, remove(path)
	case contentChanged:
		return contentChanged, atomicfile.Write(path, bytes.NewReader(content), fileMode)
	default:
		return contentChanged, fixPermissions(path)
	}
}

// NodeName is the name k3s gives the node: node-name, else the host name,
// then "-" and the id from NodeIDFile with with-node-id; lower-cased as k3s
// does. Unknown ("") when with-node-id is set and k3s has not made the id
// yet, or the host name cannot be read.
func NodeName(config map[string]any, hostname func() (string, error), nodeID func() string) string {
	name, _ := config["node-name"].(string)
	if name == "" {
		h, err := hostname()
		if err != nil {
			return ""
		}
		name = h
	}
	if withID, _ := config["with-node-id"].(bool); withID {
		id := nodeID()
		if id == "" {
			return ""
		}
		name += "-" + id
	}
	return strings.ToLower(name)
}

// readNodeID is the id in NodeIDFile, "" when there is none.
func readNodeID() string {
	return k3spaths.ReadNodeID(NodeIDFile)
}

// configSecretValues are the secrets of a raw config dict: the secret
// flags' values and the passwords of its URLs (etcd-s3-proxy's).
func configSecretValues(config any) []string {
	return append(secretConfigValues(config), ansible.URLPasswordsIn(config)...)
}

// secretConfigValues lists the values of the secret flags in a raw config
// dict, so they are masked everywhere, even when validation fails: under
// their names, the alias t, one slip away from a name (agnt-token), or
// nested where no flag belongs.
func secretConfigValues(config any) []string {
	var out []string
	switch t := config.(type) {
	case map[string]any:
		for key, v := range t {
			if isSecretKey(strings.TrimSuffix(key, "+")) {
				out = append(out, ansible.ScalarStrings(v)...)
			} else {
				out = append(out, secretConfigValues(v)...)
			}
		}
	case []any:
		for _, e := range t {
			out = append(out, secretConfigValues(e)...)
		}
	}
	return out
}

func isSecretKey(name string) bool {
	if secretKeys[name] || ownedKeys[name] == "token" {
		return true
	}
	for k := range secretKeys {
		if ansible.OneSlip(name, k) {
			return true
		}
	}
	return false
}
