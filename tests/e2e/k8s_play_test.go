//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// scenario is the molecule scenario's playbooks, which this test runs in
// molecule's order (molecule itself cannot be installed here).
func scenario(c collection, name string) string {
	return filepath.Join(c.root, "extensions", "molecule", "default", name+".yml")
}

// TestBootstrapPlay runs playbooks/k8s.yml (roles k8s_cluster and
// flux_bootstrap) through the molecule scenario's converge, idempotence,
// check and verify, against 1 controller and 2 workers over SSH, the test
// bed's API server and the real Flux Operator and controllers.
func TestBootstrapPlay(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfp", Subnet: "10.213.7", Controllers: 1, Workers: 2, Flux: true})
	dir := t.TempDir()
	varsFile, secrets, err := b.WritePlayVars(filepath.Join(dir, "play"))
	require.NoError(t, err)
	kubeconfig := filepath.Join(dir, "play", "kubeconfig")
	var outputs []string
	play := func(playbook string, args ...string) playResult {
		t.Helper()
		r := c.play(t, append([]string{"-i", b.Hosts.Inventory, playbook, "-e", "@" + varsFile,
			"-e", `{"k8s_cluster_agent_config": {"node-label": ["tier=worker"]}}`}, args...)...)
		outputs = append(outputs, r.output)
		return r
	}
	kc, _, err := b.Clients()
	require.NoError(t, err)
	ctx := t.Context()

	t.Run("the hosts have no Python and Ansible logs in as a sudo user", func(t *testing.T) {
		inventory, err := os.ReadFile(b.Hosts.Inventory)
		require.NoError(t, err)
		assert.Contains(t, string(inventory), "ansible_user="+testhosts.User+"\n")
		for _, h := range b.Hosts.Hosts {
			out, err := h.Exec("for p in python3 python3.11 python /usr/bin/python3; do $p -c 'print(42)' 2>/dev/null && exit 1; done; find /usr/lib/python3*/ -mindepth 1 | wc -l; id -u " + testhosts.User + "; sudo -n -u " + testhosts.User + " sudo -n id -u")
			require.NoError(t, err, "%s: a Python ran: %s", h.Name, out)
			assert.Equal(t, fmt.Sprintf("0\n%d\n0\n", testhosts.UserUID), out, "%s: Python's library hidden; the user has sudo", h.Name)
		}
	})

	t.Run("a first-run check on bare hosts says what a run would do, in seconds, and writes nothing", func(t *testing.T) {
		r := play(scenario(c, "converge"), "--check", "--diff")
		require.NoError(t, r.err, r.output)
		t.Logf("first-run check: %s", r.duration.Round(100*time.Millisecond))
		// No wait for a cluster that cannot appear: the waits for the nodes and for Flux are
		// skipped, and the run ends before the shortest wait it has (the play's variables keep
		// the roles' defaults) would have run out, as any such wait would.
		for _, task := range []string{"k8s_cluster : Wait until every node is", "flux_bootstrap : Verify the hand-off"} {
			s := section(r.output, task)
			assert.Contains(t, s, "skipping: ", "%s: %s", task, r.output)
			assert.NotRegexp(t, `(?m)^(ok|changed|fatal): `, s, task)
		}
		assert.Less(t, r.duration, min(roleSeconds(t, c, "k8s_cluster", "k8s_cluster_wait_timeout"), roleSeconds(t, c, "flux_bootstrap", "flux_bootstrap_wait_timeout")),
			"no wait for a cluster that cannot appear")
		for _, h := range []string{"node1", "node2", "node3", "localhost"} {
			assert.Greater(t, r.changed()[h], 0, h)
		}
		for _, want := range []string{
			"--- before: k3s on this node", "-k3s: none", "+k3s: v1.36.2+k3s1", "-k3s-agent: absent", "+k3s-agent: enabled, active", "+k3s: enabled, active",
			"release/flux-system/flux-operator", "kind: Deployment", // the operator chart's manifests
			"namespace: flux-system", "namespace: apps", // the namespaces
			"secret/flux-system/git-deploy-key", "identity.pub: <redacted>", "secret/apps/infisical-universal-auth", // the Secrets, keys only
			"fluxinstance/flux-system/flux", "kind: FluxInstance",
		} {
			assert.Contains(t, r.output, want)
		}
		// Ansible wraps warnings at the terminal's width.
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "does not exist yet (a first run in check mode): planned as for a new, empty cluster")
		assert.NoFileExists(t, kubeconfig)
		for _, h := range b.Hosts.Hosts {
			_, err := h.Exec("test ! -e /etc/rancher/k3s/config.yaml && test ! -e /usr/local/bin/k3s")
			assert.NoError(t, err, "%s untouched", h.Name)
		}
		_, err := kc.CoreV1().Namespaces().Get(ctx, "apps", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no namespace created: %v", err)
	})

	t.Run("converge", func(t *testing.T) {
		r := play(scenario(c, "converge"))
		require.NoError(t, r.err, r.output)
		t.Logf("converge: %s", r.duration.Round(100*time.Millisecond))
		for _, h := range []string{"node1", "node2", "node3", "localhost"} {
			assert.Greater(t, r.changed()[h], 0, h)
		}
		assert.Contains(t, r.output, "node1 Ready control-plane", "the role reports the nodes")

		// The operator release, namespaces, Secrets and FluxInstance, seen through the API.
		rel, err := kc.CoreV1().Secrets("flux-system").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=flux-operator,status=deployed"})
		require.NoError(t, err)
		assert.Len(t, rel.Items, 1, "flux-operator release deployed")
		for ns, want := range map[string]map[string][]string{
			"flux-system": {"git-deploy-key": {"identity", "identity.pub", "known_hosts"}, "sops-age": {"age.agekey"}},
			"platform":    {"infisical-universal-auth": {"clientId", "clientSecret"}},
			"apps":        {"infisical-universal-auth": {"clientId", "clientSecret"}},
		} {
			for name, keys := range want {
				s, err := kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err, "%s/%s", ns, name)
				var got []string
				for k := range s.Data {
					got = append(got, k)
				}
				assert.ElementsMatch(t, keys, got, "%s/%s", ns, name)
			}
		}
		status, _, _, err := b.Condition(ctx, bed.FluxInstanceGVR, "flux-system", "flux", "Ready")
		require.NoError(t, err)
		assert.Equal(t, "True", status, "FluxInstance Ready")
		assert.Regexp(t, `sources: \['refs/heads/main@sha1:[0-9a-f]{40}'\]`, r.output, "flux_bootstrap reports the hand-off")
		assert.Contains(t, r.output, "failing: []")
		cv, err := kc.CoreV1().ConfigMaps("flux-system").Get(ctx, "cluster-vars", metav1.GetOptions{})
		require.NoError(t, err, "flux_bootstrap_cluster_vars written")
		assert.Equal(t, map[string]string{"cluster_name": bed.ClusterName}, cv.Data)
		assert.Eventually(t, func() bool {
			hello, err := kc.AppsV1().Deployments("apps").Get(ctx, "hello", metav1.GetOptions{})
			return err == nil && hello.Labels["cluster"] == bed.ClusterName
		}, time.Minute, time.Second, "kustomize-controller substitutes ${cluster_name} from cluster-vars")

		info, err := os.Stat(kubeconfig)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		require.NoError(t, err)
		assert.Equal(t, "https://"+b.Hosts.Host("node1").Addr+":6443", cfg.Host, "server rewritten to the first controller")
		fetched, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		nodes, err := fetched.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "the fetched kubeconfig works with TLS verified")
		assert.Len(t, nodes.Items, 3)
		for i := range nodes.Items {
			assert.True(t, bed.NodeReady(&nodes.Items[i]), nodes.Items[i].Name)
		}
	})

	t.Run("idempotence", func(t *testing.T) {
		r := play(scenario(c, "converge"))
		require.NoError(t, r.err, r.output)
		t.Logf("idempotent re-run: %s", r.duration.Round(100*time.Millisecond))
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "localhost": 0}, r.changed(), r.output)
	})

	t.Run("cluster-vars edited since: left as it is", func(t *testing.T) {
		setName := func(v string) {
			_, err := kc.CoreV1().ConfigMaps("flux-system").Patch(ctx, "cluster-vars", types.MergePatchType,
				[]byte(`{"data":{"cluster_name":"`+v+`"}}`), metav1.PatchOptions{})
			require.NoError(t, err)
		}
		setName("edited")
		defer setName(bed.ClusterName)
		r := play(scenario(c, "converge"))
		require.NoError(t, r.err, r.output)
		assert.Equal(t, 0, r.changed()["localhost"], r.output)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "flux-system/cluster-vars (cluster_name) holds other values than given", "the warning, wrapped by Ansible")
		cv, err := kc.CoreV1().ConfigMaps("flux-system").Get(ctx, "cluster-vars", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "edited", cv.Data["cluster_name"], "written once, never updated")
	})

	t.Run("pipelined, a re-run sends no binary: the nodes keep them", func(t *testing.T) {
		r := play(scenario(c, "converge"), "-vvv")
		require.NoError(t, r.err, r.output)
		for _, h := range b.Hosts.Hosts {
			out, err := h.Exec("cd /var/lib/gitops.k3s_flux/bin 2>/dev/null && stat -c '%a %U' . && ls")
			if !pipelining() {
				assert.Error(t, err, "%s: without pipelining nothing is kept: %s", h.Name, out)
				continue
			}
			require.NoError(t, err, h.Name)
			assert.Regexp(t, `^700 root\nk3s_node-[0-9a-f]{16}\n`, out, h.Name)
			assert.NotContains(t, out, "k3s_config-", "%s: k3s_node renders the config itself", h.Name)
		}
		if pipelining() {
			assert.NotContains(t, r.output, "> PUT ", "every module ran from the binary kept on its host")
		} else {
			assert.Contains(t, r.output, "> PUT ")
		}
	})

	t.Run("a stopped node whose unit was removed is repaired", func(t *testing.T) {
		_, err := b.Hosts.Host("node2").Exec("systemctl stop k3s-agent && rm /etc/systemd/system/k3s-agent.service /etc/systemd/system/multi-user.target.wants/k3s-agent.service")
		require.NoError(t, err)
		r := play(scenario(c, "converge"))
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 1, "node3": 0, "localhost": 0}, r.changed(), r.output)
		state, err := b.Hosts.Host("node2").Exec("systemctl is-active k3s-agent && systemctl is-enabled k3s-agent")
		require.NoError(t, err)
		assert.Equal(t, "active\nenabled\n", state)
		assert.Contains(t, r.output, "node2 Ready")
	})

	t.Run("a token that cannot be read stops the play, naming the host and the file", func(t *testing.T) {
		node1 := b.Hosts.Host("node1")
		_, err := node1.Exec("mv /var/lib/rancher/k3s/server/node-token /var/lib/rancher/k3s/server/node-token.moved")
		require.NoError(t, err)
		r := play(scenario(c, "converge"))
		_, restore := node1.Exec("mv /var/lib/rancher/k3s/server/node-token.moved /var/lib/rancher/k3s/server/node-token")
		require.NoError(t, restore)
		require.Error(t, r.err)
		flat := strings.Join(strings.Fields(r.output), " ") // messages wrap at the terminal's width
		assert.Regexp(t, `fatal: \[node1( -> [^\]]+)?\]: FAILED! => .*read the node token /var/lib/rancher/k3s/server/node-token: no such file or directory`, flat)
		for _, h := range []string{"node2", "node3"} {
			assert.Zero(t, r.changed()[h], "%s: no config written with an empty token", h)
		}
	})

	t.Run("verify", func(t *testing.T) {
		r := play(scenario(c, "verify"))
		require.NoError(t, r.err, r.output)
		assert.Equal(t, 0, r.changed()["localhost"], "the hand-off in check mode finds nothing to change: %s", r.output)
	})

	// Seed 000's layout: plays and inventory in ansible/, flux/cluster.yaml and the Flux tree at the
	// root; the installed collection's play run from ansible/, with no path variable and no -i.
	t.Run("seed 000 layout", func(t *testing.T) {
		repo := t.TempDir()
		require.NoError(t, os.CopyFS(repo, os.DirFS(bed.RepoFixture())))
		vars := map[string]any{}
		raw, err := os.ReadFile(varsFile)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &vars))
		instance, err := os.ReadFile(vars["flux_bootstrap_instance_src"].(string))
		require.NoError(t, err)
		for _, path := range []string{"k8s_cluster_kubeconfig_dest", "flux_bootstrap_kubeconfig", "flux_bootstrap_instance_src", "flux_bootstrap_repo_dir"} {
			delete(vars, path)
		}
		vars["k8s_cluster_agent_config"] = map[string]any{"node-label": []any{"tier=worker"}}
		inventory, err := os.ReadFile(b.Hosts.Inventory)
		require.NoError(t, err)
		ansibleDir := filepath.Join(repo, "ansible")
		for name, content := range map[string][]byte{
			"flux/cluster.yaml":     instance,
			"ansible/inventory.ini": inventory,
			"ansible/ansible.cfg":   []byte("[defaults]\ninventory = inventory.ini\n"),
		} {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(repo, name), content, 0o600))
		}
		writeJSON(t, filepath.Join(ansibleDir, "vars.json"), vars)
		out, err := exec.Command("git", "init", "-q", repo).CombinedOutput()
		require.NoError(t, err, string(out))

		// vars.json holds the Infisical client secrets in plain text, in the repository and not
		// ignored: the check stops the play before any host is touched, naming the file.
		r := c.playIn(t, ansibleDir, nil, "gitops.k3s_flux.k8s", "-e", "@vars.json")
		outputs = append(outputs, r.output)
		require.Error(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "would publish credentials: ansible/vars.json is not ignored by git and holds flux_bootstrap_infisical_auth.apps.client_secret in plain text (line 1), flux_bootstrap_infisical_auth.platform.client_secret in plain text (line 1)")
		assert.Contains(t, flat, "fix: list it in .gitignore")
		assert.Equal(t, map[string]int{"localhost": 0}, r.changed(), "nothing changed: %s", r.output)
		require.NoError(t, os.WriteFile(filepath.Join(ansibleDir, ".gitignore"), []byte("/vars.json\n"), 0o600))

		r = c.playIn(t, ansibleDir, nil, "gitops.k3s_flux.k8s", "-e", "@vars.json")
		outputs = append(outputs, r.output)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"localhost": 0, "node1": 1, "node2": 0, "node3": 0}, r.changed(),
			"the cluster is the same; only the kubeconfig is written, in its new place: %s", r.output)
		info, err := os.Stat(filepath.Join(ansibleDir, ".generated", "kubeconfig"))
		require.NoError(t, err, "the kubeconfig lands in ansible/.generated/, not in the collection")
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		// A routine `git add -A` takes no credential into the repository Flux pulls.
		add := exec.Command("git", "-C", repo, "add", "-A", "--dry-run")
		out, err = add.CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Contains(t, string(out), "flux/cluster.yaml")
		assert.NotContains(t, string(out), ".generated", "the kubeconfig's directory is ignored")
		backups, _ := filepath.Glob(filepath.Join(ansibleDir, ".generated", "kubeconfig.*~"))
		assert.Empty(t, backups, "no backup of the admin kubeconfig")

		// The same through just, from the repository's root as seed 000 types it (the collection's
		// justfile, ans.just and fx.just copied in): ansible/'s ansible.cfg names the inventory.
		for _, name := range []string{"justfile", "ans.just", "fx.just"} {
			raw, err := os.ReadFile(filepath.Join(c.root, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(repo, name), raw, 0o600))
		}
		r = c.justIn(t, repo, "ans", "k8s", "-e", "@vars.json")
		outputs = append(outputs, r.output)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"localhost": 0, "node1": 0, "node2": 0, "node3": 0}, r.changed(), "idempotent: %s", r.output)
		r = c.justIn(t, repo, "fx", "get")
		outputs = append(outputs, r.output)
		require.NoError(t, r.err, "just fx finds ansible/.generated/kubeconfig: %s", r.output)
		assert.Contains(t, r.output, "infra-controllers")

		require.NoError(t, os.Remove(filepath.Join(repo, "flux", "cluster.yaml")))
		r = c.playIn(t, ansibleDir, nil, "gitops.k3s_flux.k8s", "-e", "@vars.json")
		outputs = append(outputs, r.output)
		require.Error(t, r.err)
		flat = strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "flux_bootstrap_instance_src "+filepath.Join(repo, "flux", "cluster.yaml")+": no such file on the controller")
		assert.NotContains(t, r.output, "TASK [gitops.k3s_flux.k8s_cluster", "no host is touched before the inputs are checked")
	})

	// Seed 001's bootstrap against the converged cluster: Flux pulls over HTTPS with a username, a
	// token and a private CA instead of the deploy key (then back to SSH), a public repository is
	// refused while the FluxInstance names a pullSecret, a sops-age installed by hand is required.
	t.Run("git over https, no credential, a hand-installed sops-age", func(t *testing.T) {
		password := "gitea-token-" + fmt.Sprint(time.Now().UnixNano())
		secrets = append(secrets, password)
		converge := scenario(c, "converge")
		r := play(converge, "--check", "--diff", "-e", `{"flux_bootstrap_git_auth": "https", "flux_bootstrap_git_password": "`+password+`"}`)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, 1, r.changed()["localhost"], "the git Secret would become username and password: %s", r.output)
		assert.Regexp(t, `(?s)flux-system/git-deploy-key.*password`, r.output, "the changed keys are named")
		assert.NotContains(t, r.output, password)

		// For real: the git server's HTTPS (basic auth, a certificate from the test bed's CA), a new
		// commit the hand-off must reach through it.
		var vars map[string]any
		raw, err := os.ReadFile(varsFile)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &vars))
		instance, err := os.ReadFile(vars["flux_bootstrap_instance_src"].(string))
		require.NoError(t, err)
		httpsInstance := filepath.Join(dir, "cluster-https.yaml")
		require.NoError(t, os.WriteFile(httpsInstance, []byte(strings.Replace(string(instance), "url: "+b.Flux.Git.SSHURL, "url: "+b.Flux.Git.HTTPSURL, 1)), 0o600))
		sha, err := b.Flux.Git.Commit("over https", map[string]string{"infra/configs/https.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: over-https\n  namespace: infra\n"})
		require.NoError(t, err)
		secrets = append(secrets, b.Flux.Git.Password())
		httpsVars := filepath.Join(dir, "https.json")
		writeBack := "write-back-" + strings.Repeat("5e", 10)
		secrets = append(secrets, writeBack)
		writeJSON(t, httpsVars, map[string]any{"flux_bootstrap_git_auth": "https", "flux_bootstrap_git_password": b.Flux.Git.Password(),
			"flux_bootstrap_git_ca_file": b.Flux.Git.CAFile, "flux_bootstrap_instance_src": httpsInstance, "flux_bootstrap_expected_revision": sha,
			// Seed 001's image-automation write-back credential, through the one generic variable.
			"flux_bootstrap_extra_secrets": []any{map[string]any{"name": "gitea-image-automation-credentials", "namespace": "flux-system",
				"string_data": map[string]any{"username": "flux-bot", "password": writeBack}}}})
		r = play(converge, "-e", "@"+httpsVars)
		require.NoError(t, r.err, r.output)
		t.Logf("to HTTPS, through the new commit: %s", r.duration.Round(100*time.Millisecond))
		assert.Contains(t, r.output, "sources: ['refs/heads/main@sha1:"+sha+"']", "source-controller fetched the new commit over HTTPS")
		gitSecret, err := kc.CoreV1().Secrets("flux-system").Get(ctx, "git-deploy-key", metav1.GetOptions{})
		require.NoError(t, err)
		var keys []string
		for k := range gitSecret.Data {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, []string{"username", "password", "ca.crt"}, keys, "the deploy key's keys gone, the HTTPS ones there")
		extra, err := kc.CoreV1().Secrets("flux-system").Get(ctx, "gitea-image-automation-credentials", metav1.GetOptions{})
		require.NoError(t, err, "flux_bootstrap_extra_secrets seeded")
		assert.Equal(t, writeBack, string(extra.Data["password"]))
		r = play(converge, "-e", "@"+httpsVars)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, 0, r.changed()["localhost"], "idempotent over HTTPS: %s", r.output)
		// A public repository: no credential and no pullSecret; source-controller pulls anonymously.
		public := strings.Replace(string(instance), "url: "+b.Flux.Git.SSHURL, "url: "+b.Flux.Git.PublicURL, 1)
		public = strings.Replace(public, "    pullSecret: git-deploy-key\n", "", 1)
		require.NotContains(t, public, "pullSecret")
		publicInstance := filepath.Join(dir, "cluster-public.yaml")
		require.NoError(t, os.WriteFile(publicInstance, []byte(public), 0o600))
		sha, err = b.Flux.Git.Commit("public", map[string]string{"infra/configs/public.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: public\n  namespace: infra\n"})
		require.NoError(t, err)
		publicVars := filepath.Join(dir, "public.json")
		writeJSON(t, publicVars, map[string]any{"flux_bootstrap_git_auth": "none", "flux_bootstrap_instance_src": publicInstance, "flux_bootstrap_expected_revision": sha})
		r = play(converge, "-e", "@"+publicVars)
		require.NoError(t, r.err, r.output)
		t.Logf("to a public repository: %s", r.duration.Round(100*time.Millisecond))
		assert.Contains(t, r.output, "sources: ['refs/heads/main@sha1:"+sha+"']", "source-controller fetched the new commit anonymously")
		assert.Equal(t, 1, r.changed()["localhost"], "only the FluxInstance: no Secret for a public repository: %s", r.output)

		r = play(converge)
		require.NoError(t, r.err, r.output)
		t.Logf("back to SSH: %s", r.duration.Round(100*time.Millisecond))
		assert.Equal(t, 1+1, r.changed()["localhost"], "back to SSH: the Secret and the FluxInstance: %s", r.output)

		r = play(converge, "--check", "-e", "flux_bootstrap_git_auth=none")
		require.Error(t, r.err)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "spec.sync.pullSecret flux-system/git-deploy-key will not exist", "a public repository's FluxInstance names no pullSecret")
		assert.NotContains(t, r.output, "TASK [gitops.k3s_flux.k8s_cluster", "stopped before any host")

		r = play(converge, "--check", "-e", `{"flux_bootstrap_sops_verify_only": true, "flux_bootstrap_sops_age_key_file": ""}`)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, 0, r.changed()["localhost"], "sops-age is there and not seeded again: %s", r.output)
		// A real run: nothing else differs, and the FluxInstance is not applied without the key.
		r = play(converge, "-e", `{"flux_bootstrap_sops_verify_only": true, "flux_bootstrap_sops_age_key_file": "", "flux_bootstrap_sops_secret_name": "sops-by-hand"}`)
		require.Error(t, r.err)
		flat = strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "required Secrets missing, so the FluxInstance was not applied: flux-system/sops-by-hand", r.output)
		assert.Equal(t, map[string]int{"localhost": 0, "node1": 0, "node2": 0, "node3": 0}, r.changed(), "nothing changed on the way: %s", r.output)
	})

	// A label for node3 (host_vars beside the inventory) and a new Infisical secret for one tier.
	hostVars := filepath.Join(filepath.Dir(b.Hosts.Inventory), "host_vars")
	require.NoError(t, os.MkdirAll(hostVars, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(hostVars, "node3.yml"), []byte("k8s_cluster_node_config:\n  node-label: [tier=worker, disk=ssd]\n"), 0o600))
	newSecret := "rotated-" + strings.Repeat("9f", 12)
	secrets = append(secrets, newSecret)
	changedVars := filepath.Join(dir, "changed.json")
	writeJSON(t, changedVars, map[string]any{"flux_bootstrap_infisical_auth": map[string]any{
		"platform": map[string]any{"client_id": "bed-platform", "client_secret": secretOf(t, kc, ctx, "platform")},
		"apps":     map[string]any{"client_id": "bed-apps", "client_secret": newSecret},
	}})

	t.Run("check and diff report exactly the label and the secret, and write nothing", func(t *testing.T) {
		sums := configSums(t, b)
		before, err := kc.CoreV1().Secrets("apps").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		require.NoError(t, err)
		r := play(scenario(c, "converge"), "-e", "@"+changedVars, "--check", "--diff")
		require.NoError(t, r.err, r.output)
		// node3: one task, its config and the restart a real run would do.
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 1, "localhost": 1}, r.changed(), r.output)
		assert.Contains(t, r.output, "+k3s-agent: enabled, active (restarted for its new config)")
		assert.Contains(t, r.output, "+  - disk=ssd", "the label in the diff")
		assert.Regexp(t, regexp.MustCompile(`apps/infisical-universal-auth`), r.output, "the Secret in the diff")
		assert.Contains(t, r.output, "clientSecret", "the changed key is named")
		assert.NotContains(t, r.output, newSecret)
		assert.Equal(t, sums, configSums(t, b), "no config written")
		after, err := kc.CoreV1().Secrets("apps").Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "no Secret written")
	})

	t.Run("applying the change restarts only the changed node", func(t *testing.T) {
		pids := servicePIDs(t, b)
		r := play(scenario(c, "converge"), "-e", "@"+changedVars, "--diff")
		require.NoError(t, r.err, r.output)
		after := servicePIDs(t, b)
		assert.Equal(t, pids["node1"], after["node1"], "node1 not restarted")
		assert.Equal(t, pids["node2"], after["node2"], "node2 not restarted")
		assert.NotEqual(t, pids["node3"], after["node3"], "node3 restarted")
		assert.Equal(t, newSecret, secretOf(t, kc, ctx, "apps"))
		n, err := kc.CoreV1().Nodes().Get(ctx, "node3", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "ssd", n.Labels["disk"])
	})

	t.Run("no secret in -vvv output of any run", func(t *testing.T) {
		r := play(scenario(c, "converge"), "-e", "@"+changedVars, "-vvv")
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "localhost": 0}, r.changed())
		// The action plugins ask each node its platform once for the whole play (over SSH): with
		// pipelining in the node's first module command, else in a command of its own. The
		// controller's own tasks (local connection) need no command.
		if pipelining() {
			assert.Equal(t, 3, strings.Count(r.output, `u="$(uname -sm)"`), "one uname per node, in its first module command")
			assert.NotContains(t, r.output, "uname -sm && sleep 0", "no command of its own")
		} else {
			assert.Equal(t, 3, strings.Count(r.output, `'"'"'uname -sm && sleep 0'"'"'`), "one uname per node")
			assert.Equal(t, 3, strings.Count(r.output, "uname -sm && sleep 0"), "and none on the controller")
		}
		assert.Contains(t, r.output, `"gitops_k3s_flux_platform": "linux_amd64"`)
		nodeToken, err := b.Hosts.Host("node1").Exec("cat /var/lib/rancher/k3s/server/node-token")
		require.NoError(t, err)
		_, tok, _ := strings.Cut(strings.TrimSpace(nodeToken), "::server:")
		require.NotEmpty(t, tok)
		for _, secret := range append(secrets, tok, secretOf(t, kc, ctx, "platform")) {
			for i, out := range outputs {
				assert.NotContains(t, out, secret, "run %d", i)
			}
		}
	})
}

// secretOf reads the Infisical client secret in a tier namespace.
func secretOf(t *testing.T, kc kubernetes.Interface, ctx context.Context, ns string) string {
	t.Helper()
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, "infisical-universal-auth", metav1.GetOptions{})
	require.NoError(t, err)
	return string(s.Data["clientSecret"])
}

// configSums is each host's /etc/rancher/k3s/config.yaml sha256.
func configSums(t *testing.T, b *bed.Bed) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range b.Hosts.Hosts {
		raw, err := h.Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(raw))
		out[h.Name] = hex.EncodeToString(sum[:])
	}
	return out
}

// servicePIDs is each host's running k3s (stand-in) process.
func servicePIDs(t *testing.T, b *bed.Bed) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range b.Hosts.Hosts {
		pid, err := h.Exec("cat /var/lib/testhost/systemd/k3s.pid /var/lib/testhost/systemd/k3s-agent.pid 2>/dev/null || true")
		require.NoError(t, err)
		out[h.Name] = strings.TrimSpace(pid)
		require.NotEmpty(t, out[h.Name], h.Name)
	}
	return out
}

// section is the part of a play's output under the tasks whose name
// contains name.
func section(output, name string) string {
	var out strings.Builder
	in := false
	for _, line := range strings.Split(output, "\n") {
		if strings.HasPrefix(line, "TASK [") {
			in = strings.Contains(line, name)
		}
		if in {
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}
