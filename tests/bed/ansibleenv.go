package bed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// AnsibleEnv is the environment an Ansible command of the tests runs with:
// collections only from collections, Ansible's home, config and local
// temporary files under dir. What the machine's user installed or set (a
// collection in ~/.ansible/collections, ~/.ansible.cfg, ANSIBLE_* variables)
// plays no part, so the tests pass on a machine where the collection is
// already installed the README's way. config is the ansible.cfg to read;
// empty writes an empty one under dir.
func AnsibleEnv(dir, collections, config string) ([]string, error) {
	home := filepath.Join(dir, "ansible-home")
	tmp := filepath.Join(dir, "ansible-tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if config == "" {
		config = filepath.Join(dir, "ansible.cfg")
		if err := os.WriteFile(config, []byte("[defaults]\n"), 0o600); err != nil {
			return nil, err
		}
	}
	return append(EnvWithout("ANSIBLE_"),
		"ANSIBLE_HOME="+home,
		"ANSIBLE_CONFIG="+config,
		"ANSIBLE_COLLECTIONS_PATH="+collections,
		// Nor from site-packages (pip's ansible ships collections there).
		"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false",
		"ANSIBLE_LOCAL_TEMP="+tmp,
	), nil
}

// EnvWithout is this process's environment without the variables whose
// "NAME=value" starts with one of prefixes.
func EnvWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

// DecoyMessage is what every play and role of the decoy collection says.
const DecoyMessage = "the tests used the copy of gitops.k3s_flux in the user's ~/.ansible/collections, not their own"

// UserHomeWithCollection makes a user's home directory under dir where the
// release is already installed the README's way (ansible-galaxy
// collection install, into ~/.ansible/collections), then turns that copy
// into a decoy: its plays and roles fail saying so and it has no modules.
// Ansible commands run with HOME set to it show whether the tests are
// hermetic: one that reads the user's collections fails.
func (r *Release) UserHomeWithCollection(dir string) (string, error) {
	home := filepath.Join(dir, "user-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	cmd := exec.Command("ansible-galaxy", "collection", "install", "gitops.k3s_flux:=="+r.Version)
	cmd.Dir = home
	cmd.Env = append(EnvWithout("ANSIBLE_", "HOME="), "HOME="+home, "ANSIBLE_GALAXY_SERVER="+r.URL)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("ansible-galaxy collection install into the user's home: %w: %s", err, out)
	}
	root := filepath.Join(home, ".ansible", "collections", "ansible_collections", "gitops", "k3s_flux")
	if err := os.RemoveAll(filepath.Join(root, "plugins")); err != nil {
		return "", err
	}
	failTask := "- name: Decoy\n  ansible.builtin.fail:\n    msg: \"" + DecoyMessage + "\"\n"
	decoys := map[string]string{}
	for _, role := range []string{"k8s_cluster", "flux_bootstrap"} {
		decoys[filepath.Join(root, "roles", role, "tasks", "main.yml")] = "---\n" + failTask
	}
	plays, err := filepath.Glob(filepath.Join(root, "playbooks", "*.yml"))
	if err != nil || len(plays) == 0 {
		return "", fmt.Errorf("the installed collection has no playbooks (%v)", err)
	}
	for _, p := range plays {
		decoys[p] = "---\n- name: Decoy\n  hosts: localhost\n  gather_facts: false\n  tasks:\n" + indent(failTask, "    ")
	}
	for path, content := range decoys {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return home, nil
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
