package bed

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"filippo.io/age"
)

// ClusterName is the test bed's cluster variable cluster_name, which the
// test repository's apps Kustomization substitutes into Deployment hello's
// label "cluster".
const ClusterName = "testbed"

// ClusterVars is seed_secret's config_maps item for those variables, as role
// flux_bootstrap writes it from flux_bootstrap_cluster_vars.
func ClusterVars() map[string]any {
	return map[string]any{"name": "cluster-vars", "namespace": "flux-system", "data": map[string]any{"cluster_name": ClusterName}}
}

// Tiers are the tier namespaces the play seeds with Infisical auth on the
// test bed.
var Tiers = []string{"platform", "apps"}

// PlayVars are the variables that point playbooks/k8s.yml at this test
// bed: the stand-in's install script, a kubeconfig destination in dir, the
// loopback registry's chart, the git server's deploy key and host key, a
// fresh age identity, Infisical credentials per tier, and
// examples/flux/cluster.yaml pointed at the git server. Secrets are written
// into dir (0600) and their values returned in secrets, for tests that
// check they never leak.
func (b *Bed) PlayVars(dir string) (vars map[string]any, secrets []string, err error) {
	if b.Flux == nil {
		return nil, nil, fmt.Errorf("the play needs a test bed with Flux")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, nil, err
	}
	ageFile := filepath.Join(dir, "sops.agekey")
	if err := os.WriteFile(ageFile, []byte(id.String()+"\n"), 0o600); err != nil {
		return nil, nil, err
	}
	deployKey, err := os.ReadFile(b.Flux.Git.DeployKey)
	if err != nil {
		return nil, nil, err
	}
	secrets = append(secrets, id.String(), keyBody(string(deployKey)))
	infisical := map[string]any{}
	for _, tier := range Tiers {
		clientSecret := randomHex(24)
		infisical[tier] = map[string]any{"client_id": "bed-" + tier, "client_secret": clientSecret}
		secrets = append(secrets, clientSecret)
	}
	instance, err := clusterYAML(b.Flux.Git.SSHURL, "clusters/test")
	if err != nil {
		return nil, nil, err
	}
	instanceFile := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(instanceFile, []byte(instance), 0o600); err != nil {
		return nil, nil, err
	}
	vars = map[string]any{
		// The controller's Python for the built-in modules (a pyenv shim may come first in PATH).
		"ansible_python_interpreter":         "/usr/bin/python3",
		"k8s_cluster_install_script_url":     b.K3s.InstallURL,
		"k8s_cluster_kubeconfig_dest":        filepath.Join(dir, "kubeconfig"),
		"flux_bootstrap_kubeconfig":          filepath.Join(dir, "kubeconfig"),
		"flux_bootstrap_chart_ref":           b.Registry.ChartRef(),
		"flux_bootstrap_chart_plain_http":    true,
		"flux_bootstrap_git_deploy_key_file": b.Flux.Git.DeployKey,
		"flux_bootstrap_git_known_hosts":     b.Flux.Git.KnownHosts,
		"flux_bootstrap_sops_age_key_file":   ageFile,
		"flux_bootstrap_tiers":               Tiers,
		"flux_bootstrap_infisical_auth":      infisical,
		"flux_bootstrap_cluster_vars":        map[string]any{"cluster_name": ClusterName},
		"flux_bootstrap_instance_src":        instanceFile,
		"flux_bootstrap_repo_dir":            RepoFixture(),
	}
	return vars, secrets, nil
}

// WritePlayVars writes PlayVars as JSON (for ansible-playbook -e @file).
func (b *Bed) WritePlayVars(dir string) (path string, secrets []string, err error) {
	vars, secrets, err := b.PlayVars(dir)
	if err != nil {
		return "", nil, err
	}
	raw, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "play-vars.json")
	return path, secrets, os.WriteFile(path, raw, 0o600)
}

// InstallCollection builds the collection tarball from the tree at root
// (make collection) and installs it with ansible-galaxy into
// dir/collections, as a user would; it returns that path, for
// ANSIBLE_COLLECTIONS_PATH.
func InstallCollection(root, dir string) (string, error) {
	out, err := exec.Command("make", "-C", root, "collection").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("make collection: %w: %s", err, out)
	}
	m := regexp.MustCompile(`Created collection for gitops\.k3s_flux at (\S+)`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("make collection did not report the tarball: %s", out)
	}
	path := filepath.Join(dir, "collections")
	if out, err := exec.Command("ansible-galaxy", "collection", "install", "--force", "-p", path, string(m[1])).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ansible-galaxy collection install: %w: %s", err, out)
	}
	return path, nil
}

// clusterYAML is examples/flux/cluster.yaml synced from url at path.
func clusterYAML(url, path string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "examples", "flux", "cluster.yaml"))
	if err != nil {
		return "", err
	}
	out := strings.NewReplacer("url: ssh://git@github.com/example-org/home-ops.git", "url: "+url, "path: clusters/home\n", "path: "+path+"\n").Replace(string(raw))
	if !strings.Contains(out, url) || !strings.Contains(out, "path: "+path) {
		return "", fmt.Errorf("examples/flux/cluster.yaml no longer has the sync url and path this replaces")
	}
	return out, nil
}

// keyBody is the base64 body of a PEM or OpenSSH private key: the part
// that must never appear in output.
func keyBody(key string) string {
	var lines []string
	for _, l := range strings.Split(key, "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return key
	}
	return lines[len(lines)/2] // one line from the middle is enough to find
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
