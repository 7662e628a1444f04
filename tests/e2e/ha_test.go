//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// haBed is the bed of 3 controllers and 1 worker that the HA tests below share,
// in the order they are declared: a converged 3+1 cluster costs a minute or
// more per ansible-core pass, too much to build again for each. Each test
// still runs alone (-run TestRestoreSnapshot): haConverged converges the
// cluster it needs when the bed has none, and a bed a failed test left
// behind is replaced (bed.Shared).
var haBed = bed.NewShared(bed.Options{Name: "k3sfa", Subnet: "10.213.8", Controllers: 3, Workers: 1})

// haDefaultVersion is role k8s_cluster's default k3s version, which a
// converge without k8s_cluster_k3s_version installs.
const haDefaultVersion = "v1.36.2+k3s1"

// haCluster is the shared bed as an HA test uses it: the installed
// collection, the bed and the variables its plays run with (airgap files,
// role k8s_cluster alone).
type haCluster struct {
	c    collection
	b    *bed.Bed
	dir  string // the play's variables file and the written kubeconfig
	vars map[string]any
}

// haShared is the shared bed for t; fresh asks for one no play has touched.
func haShared(t *testing.T, fresh bool) (h *haCluster, isNew bool) {
	t.Helper()
	c := installCollection(t)
	b, isNew := haBed.Get(t, fresh)
	dir := filepath.Join(b.Dir, "plays")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	sum := func(path string) string {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		s := sha256.Sum256(raw)
		return hex.EncodeToString(s[:])
	}
	vars := map[string]any{
		"ansible_python_interpreter":       "/usr/bin/python3",
		"flux_bootstrap_enabled":           false,
		"k8s_cluster_install_source":       "airgap",
		"k8s_cluster_airgap_binary":        b.K3s.Binary,
		"k8s_cluster_airgap_binary_sha256": sum(b.K3s.Binary),
		"k8s_cluster_airgap_script":        b.K3s.Script,
		"k8s_cluster_airgap_script_sha256": sum(b.K3s.Script),
		"k8s_cluster_kubeconfig_dest":      filepath.Join(dir, "kubeconfig"),
	}
	return &haCluster{c: c, b: b, dir: dir, vars: vars}, isNew
}

// haConverged is the shared bed with its cluster converged: node1..node4
// Ready on one k3s version, version if given, and the kubeconfig written.
// It converges the cluster on a bed no play has touched, or on a new one
// when the bed holds another state; it returns the version.
func haConverged(t *testing.T, version string) (*haCluster, string) {
	t.Helper()
	h, isNew := haShared(t, false)
	if got, ok := h.converged(t); ok && (version == "" || got == version) {
		return h, got
	}
	if !isNew {
		h, _ = haShared(t, true)
	}
	if version == "" {
		version = haDefaultVersion
	}
	v := map[string]any{"k8s_cluster_k3s_version": version}
	for k, x := range h.vars {
		v[k] = x
	}
	r := h.run(t, "k8s.yml", v)
	require.NoError(t, r.err, r.output)
	got, ok := h.converged(t)
	require.True(t, ok, "converged: %s", r.output)
	t.Logf("the shared HA bed converged on %s for %s: %s", got, t.Name(), r.duration.Round(100*time.Millisecond))
	return h, got
}

// converged says whether the cluster is node1..node4 Ready on one version,
// with its kubeconfig written, and that version.
func (h *haCluster) converged(t *testing.T) (string, bool) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(h.dir, "kubeconfig")); err != nil {
		return "", false
	}
	kc, _, err := h.b.Clients()
	require.NoError(t, err)
	nodes, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	versions := map[string]bool{}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		if !ready || n.Spec.Unschedulable {
			return "", false
		}
		versions[n.Status.NodeInfo.KubeletVersion] = true
	}
	if strings.Join(names, ",") != "node1,node2,node3,node4" || len(versions) != 1 {
		return "", false
	}
	for v := range versions {
		return v, true
	}
	return "", false
}

// run runs one of the collection's plays on the hosts with the variables v,
// as test t.
func (h *haCluster) run(t *testing.T, playbook string, v map[string]any, args ...string) playResult {
	t.Helper()
	file := filepath.Join(h.dir, "vars.json")
	writeJSON(t, file, v)
	return h.c.play(t, append([]string{"-i", h.b.Hosts.Inventory, filepath.Join(h.c.root, "playbooks", playbook), "-e", "@" + file}, args...)...)
}

// plays are run and k8s.yml's play bound to test t: the subtests call them,
// so that the SSH control sockets live under the top-level test's short
// temporary directory.
func (h *haCluster) plays(t *testing.T) (run func(playbook string, v map[string]any, args ...string) playResult, play func(v map[string]any, args ...string) playResult) {
	run = func(playbook string, v map[string]any, args ...string) playResult {
		t.Helper()
		return h.run(t, playbook, v, args...)
	}
	play = func(v map[string]any, args ...string) playResult {
		t.Helper()
		return h.run(t, "k8s.yml", v, args...)
	}
	return run, play
}

// bare says whether host h has nothing of k3s left, nor the binaries the
// collection keeps there with pipelining. (The test hosts' /var/lib/gitops.k3s_flux
// is a mount point, private to each: the directory stays, its bin goes.)
func bare(h *testhosts.Host) error {
	_, err := h.Exec("test ! -e /usr/local/bin/k3s && test ! -e /etc/rancher/k3s && test ! -e /var/lib/rancher/k3s && test ! -e /var/lib/gitops.k3s_flux/bin")
	return err
}

// TestHAPlay runs role k8s_cluster alone (flux_bootstrap_enabled false) on
// 3 controllers and 1 worker from airgap files: cluster-init on the first
// controller, the others joining one at a time, then the worker; a registry
// mirror added later.
func TestHAPlay(t *testing.T) {
	h, _ := haShared(t, true)
	b, vars := h.b, h.vars
	_, play := h.plays(t)

	t.Run("a wrong sha256 fails before anything is copied", func(t *testing.T) {
		bad := map[string]any{}
		for k, v := range vars {
			bad[k] = v
		}
		bad["k8s_cluster_airgap_binary_sha256"] = strings.Repeat("0", 64)
		r := play(bad)
		require.Error(t, r.err)
		// No host goes on to wait for a controller that never started: the play stops before
		// any installs, and ends before such a wait (k8s_cluster_wait_timeout, the role's
		// default here) would have run out.
		assert.NotContains(t, r.output, "TASK [gitops.k3s_flux.k8s_cluster : Configure k3s", "no host went on")
		assert.NotContains(t, r.output, "TASK [gitops.k3s_flux.k8s_cluster : Wait until every node is", "no host went on")
		assert.Less(t, r.duration, roleSeconds(t, h.c, "k8s_cluster", "k8s_cluster_wait_timeout"), "no host waited for a controller that never started")
		assert.Contains(t, r.output, "k8s_cluster_airgap_binary "+b.K3s.Binary+": sha256 "+vars["k8s_cluster_airgap_binary_sha256"].(string)+", expected "+strings.Repeat("0", 64))
		for _, h := range b.Hosts.Hosts {
			_, err := h.Exec("test ! -e /etc/rancher/k3s/config.yaml && test ! -e /usr/local/bin/k3s")
			assert.NoError(t, err, "%s untouched", h.Name)
		}
	})

	t.Run("converge", func(t *testing.T) {
		// A config written before k3s, as k3s's docs allow, naming a server that runs no k3s
		// (another cluster's, or a plan): node1 has joined nothing and starts the cluster.
		_, err := b.Hosts.Host("node1").Exec("mkdir -p /etc/rancher/k3s")
		require.NoError(t, err)
		require.NoError(t, b.Hosts.Host("node1").WriteFile("/etc/rancher/k3s/config.yaml",
			[]byte("server: https://"+b.Hosts.Host("node2").Addr+":6443\nnode-label:\n  - written=before\n"), 0o600))
		r := play(vars)
		require.NoError(t, r.err, r.output)
		t.Logf("HA converge: %s", r.duration.Round(100*time.Millisecond))
		// One node task per joining controller, in order, before the worker's.
		installs := regexp.MustCompile(`(?m)^changed: \[(node\d)\]`).FindAllStringSubmatch(section(r.output, "Configure k3s, install it"), -1)
		var order []string
		for _, m := range installs {
			order = append(order, m[1])
		}
		assert.Equal(t, []string{"node1", "node2", "node3", "node4"}, order, r.output)
		// One at a time (throttle 1): the stand-in logs each start of k3s, and node3's came after
		// node2's, whose task returned only once node2 answered /readyz.
		var started []time.Time
		for _, h := range []string{"node1", "node2", "node3"} {
			runs, err := bed.Invocations(b.Hosts.Host(h))
			require.NoError(t, err)
			require.NotEmpty(t, runs, h)
			started = append(started, runs[0].Time)
		}
		assert.True(t, started[0].Before(started[1]) && started[1].Before(started[2]), "the controllers' k3s started in inventory order: %v", started)
		cfg, err := b.Hosts.Host("node1").Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Contains(t, cfg, "cluster-init: true")
		assert.NotContains(t, cfg, "server:", "the config written before k3s joined nothing")
		for _, h := range []string{"node2", "node3"} {
			cfg, err := b.Hosts.Host(h).Exec("cat /etc/rancher/k3s/config.yaml")
			require.NoError(t, err)
			assert.Contains(t, cfg, "server: https://"+b.Hosts.Host("node1").Addr+":6443", h)
			assert.NotContains(t, cfg, "cluster-init", h)
		}
		assert.Contains(t, r.output, "node4 Ready <none>")
	})

	t.Run("idempotence", func(t *testing.T) {
		r := play(vars)
		require.NoError(t, r.err, r.output)
		t.Logf("HA idempotent re-run: %s", r.duration.Round(100*time.Millisecond))
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "node4": 0, "localhost": 0}, r.changed(), r.output)
	})

	t.Run("a registry mirror added later: registries.yaml on every node, k3s restarted to read it", func(t *testing.T) {
		// The mirror's CA and a client certificate, given as content: the nodes have no Python
		// to receive files through copy; k3s_registries writes them and points the file at them.
		ca, err := pki.Write(t.TempDir(), nil, nil)
		require.NoError(t, err)
		clientCert, clientKey, err := ca.Issue("k3s-mirror-client", nil, nil, nil)
		require.NoError(t, err)
		keyLines := strings.Split(strings.TrimSpace(string(clientKey)), "\n")
		keyLine := keyLines[len(keyLines)/2]
		withRegistries := map[string]any{"k8s_cluster_registries": map[string]any{
			"mirrors": map[string]any{"docker.io": map[string]any{"endpoint": []string{"https://mirror.example.internal:5000"}}},
			"configs": map[string]any{"mirror.example.internal:5000": map[string]any{
				"auth": map[string]any{"username": "k3s", "password": e2eRegistryPassword},
				"tls":  map[string]any{"ca": string(ca.CertPEM), "cert": string(clientCert), "key": string(clientKey)},
			}},
		}}
		for k, v := range vars {
			withRegistries[k] = v
		}
		// Bad input first (the key under a misspelt name): refused on the first node, nothing
		// changed, and the key nowhere in the -vvv output.
		misspelt := map[string]any{"k8s_cluster_registries": map[string]any{"configs": map[string]any{
			"mirror.example.internal:5000": map[string]any{"tls": map[string]any{"cert": string(clientCert), "kye": string(clientKey)}},
		}}}
		for k, v := range vars {
			misspelt[k] = v
		}
		r := play(misspelt, "--diff", "-vvv")
		require.Error(t, r.err)
		assert.Contains(t, r.output, `unknown key \"kye\" (did you mean key?)`)
		assert.NotContains(t, r.output, keyLine, "the client key is never shown, also when refused")
		for _, h := range b.Hosts.Hosts {
			_, err := h.Exec("test ! -e /etc/rancher/k3s/registries.yaml && test ! -e /etc/rancher/k3s/registries-tls")
			assert.NoError(t, err, "%s unchanged", h.Name)
		}

		r = play(withRegistries, "--diff", "-vvv")
		require.NoError(t, r.err, r.output)
		assert.NotContains(t, r.output, e2eRegistryPassword)
		assert.NotContains(t, r.output, keyLine, "the client key is never shown")
		restarted := regexp.MustCompile(`(?m)^changed: \[(node\d)\]`).FindAllStringSubmatch(section(r.output, "Configure k3s, install it"), -1)
		assert.Len(t, restarted, 4, "each node's k3s restarted for its new registries.yaml: %s", r.output)
		tlsDir := "/etc/rancher/k3s/registries-tls/mirror.example.internal_5000/"
		for _, h := range b.Hosts.Hosts {
			assertRootOnly(t, h, "/etc/rancher/k3s/registries.yaml")
			for file, want := range map[string][]byte{"ca.crt": ca.CertPEM, "client.crt": clientCert, "client.key": clientKey} {
				assertRootOnly(t, h, tlsDir+file)
				got, err := h.Exec("cat " + tlsDir + file)
				require.NoError(t, err)
				assert.Equal(t, string(want), got, "%s %s", h.Name, file)
			}
			registries, err := h.Exec("cat /etc/rancher/k3s/registries.yaml")
			require.NoError(t, err)
			assert.Contains(t, registries, tlsDir+"client.key", h.Name)
			// What k3s read when it started last (the stand-in reads registries.yaml as k3s does).
			runs, err := bed.Invocations(h)
			require.NoError(t, err)
			require.NotEmpty(t, runs, h.Name)
			assert.Equal(t, []string{"docker.io"}, runs[len(runs)-1].RegistryMirrors, h.Name)
		}
		r = play(withRegistries)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "node4": 0, "localhost": 0}, r.changed(), r.output)
	})
}

// TestSnapshotBeforeRollingUpgrade runs the rolling upgrades on the 3+1
// cluster (upgrade_test.go): each takes an etcd snapshot named after the
// step and the version before it touches the first node; a stopped rollout
// names its snapshot; no downgrade.
func TestSnapshotBeforeRollingUpgrade(t *testing.T) {
	h, _ := haConverged(t, haDefaultVersion)
	_, play := h.plays(t)
	testUpgrades(t, h.b, h.vars, play)
}

// TestSnapshotOnDemand takes a snapshot with playbooks/snapshot.yml and
// lists the kept ones; S3 credentials masked (snapshot_test.go).
func TestSnapshotOnDemand(t *testing.T) {
	h, _ := haConverged(t, "")
	run, _ := h.plays(t)
	testSnapshots(t, h.b, h.vars, run)
}

// TestRebuildFirstControllerRejoins resets the first controller alone and
// converges again: it joins the running cluster (rebuild_test.go).
func TestRebuildFirstControllerRejoins(t *testing.T) {
	h, version := haConverged(t, "")
	run, _ := h.plays(t)
	testRebuildFirst(t, h.b, h.vars, version, run)
}

// TestRestoreSnapshot restores a snapshot with playbooks/restore.yml: an
// object deleted after it comes back (restore_test.go).
func TestRestoreSnapshot(t *testing.T) {
	h, version := haConverged(t, "")
	run, _ := h.plays(t)
	testRestore(t, h.b, h.vars, version, run)
}

// TestHAReset resets the 3+1 cluster: asked first, then bare, then
// converged again.
func TestHAReset(t *testing.T) {
	h, _ := haConverged(t, "")
	c, b, dir, vars := h.c, h.b, h.dir, h.vars
	run, play := h.plays(t)
	reset := func(args ...string) playResult {
		t.Helper()
		return run("reset.yml", vars, args...)
	}
	// Short subtest names: the SSH control sockets live under the subtest's temporary directory.
	// Reset asks first, whatever -l says, naming the hosts: unconfirmed, nothing changes.
	t.Run("reset unconfirmed", func(t *testing.T) {
		r := reset()
		require.Error(t, r.err)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "Not confirmed (answer yes, or set k8s_cluster_reset_confirmed=true): k3s was to be uninstalled from node1, node2, node3, node4; nothing was changed.")
		// Aimed at one node (a typo of reset for remove_node): the question is still asked.
		r = reset("-l", "node4")
		require.Error(t, r.err)
		flat = strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "k3s was to be uninstalled from node4 only (node1, node2, node3 stay; a partial reset neither drains its nodes nor deletes their Node or etcd member: remove_node does); nothing was changed.")
		for _, h := range b.Hosts.Hosts {
			assert.Error(t, bare(h), "%s untouched", h.Name)
		}
		assert.FileExists(t, filepath.Join(dir, "kubeconfig"))
	})

	// Reset takes the hosts back to bare, then the cluster converges again.
	t.Run("reset then converge", func(t *testing.T) {
		// As a user types it: just ans reset from a repository with the collection's justfiles,
		// confirmed to just (--yes answers its prompt); the installed collection's reset play runs.
		repo := t.TempDir()
		for _, name := range []string{"justfile", "ans.just", "fx.just"} {
			raw, err := os.ReadFile(filepath.Join(c.root, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(repo, name), raw, 0o600))
		}
		require.NoError(t, os.WriteFile(filepath.Join(repo, "ansible.cfg"), []byte("[defaults]\ninventory = "+b.Hosts.Inventory+"\n"), 0o600))
		writeJSON(t, filepath.Join(repo, "vars.json"), vars)
		// A copy k8s_cluster_kubeconfig_backup kept: admin credentials too, removed with the cluster.
		backup := filepath.Join(dir, "kubeconfig.4242.2026-12-04@10:00:00~")
		require.NoError(t, os.WriteFile(backup, []byte("apiVersion: v1\n"), 0o600))
		r := c.justIn(t, repo, "--yes", "ans", "reset", "-e", "@vars.json")
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "PLAY [Uninstall k3s]")
		for _, h := range b.Hosts.Hosts {
			assert.NoError(t, bare(h), "%s bare", h.Name)
			assert.Equal(t, 1, r.recap[h.Name]["changed"]+map[bool]int{true: -1}[h.Name == "node1"], "%s: %s", h.Name, r.output)
		}
		assert.NoFileExists(t, filepath.Join(dir, "kubeconfig"))
		assert.NoFileExists(t, backup)
		t.Logf("reset of 3+1 nodes: %s", r.duration.Round(100*time.Millisecond))

		r = reset("-e", "k8s_cluster_reset_confirmed=true")
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "node4": 0}, r.changed(), "bare already: %s", r.output)

		r = play(vars)
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "node4 Ready <none>")
		assert.FileExists(t, filepath.Join(dir, "kubeconfig"))
	})
}

// TestSnapshotBeforeRemoval removes nodes with playbooks/remove_node.yml
// (remove_test.go): refusals, then an agent and a server, the server's
// removal after an etcd snapshot named after it; a with-node-id worker
// removed by the name k3s gave it; a partial reset. Last of the HA tests: it
// leaves the cluster smaller, and the shared bed is taken down after it.
func TestSnapshotBeforeRemoval(t *testing.T) {
	// Registered first, so that it runs after the shared bed's failure report.
	t.Cleanup(func() { assert.NoError(t, haBed.Close()) })
	h, _ := haConverged(t, "")
	b, dir, vars := h.b, h.dir, h.vars
	run, play := h.plays(t)
	reset := func(args ...string) playResult {
		t.Helper()
		return run("reset.yml", vars, args...)
	}

	testRemoveNode(t, b, func(args ...string) playResult {
		t.Helper()
		return run("remove_node.yml", vars, args...)
	})

	// A worker with with-node-id, which k3s names <host>-<the id it keeps in
	// /etc/rancher/node/id>: it joins, the re-run knows it by that name, and the remove play
	// deletes that Node (not a "node4" that never was).
	t.Run("with-node-id", func(t *testing.T) {
		idVars := map[string]any{"k8s_cluster_agent_config": map[string]any{"with-node-id": true}}
		for k, v := range vars {
			idVars[k] = v
		}
		kc, _, err := b.Clients()
		require.NoError(t, err)
		r := play(idVars, "-l", "node1,node2,node4")
		require.NoError(t, r.err, r.output)
		id, err := b.Hosts.Host("node4").Exec("cat /etc/rancher/node/id")
		require.NoError(t, err)
		name := "node4-" + strings.TrimSpace(id)
		require.Regexp(t, `^node4-[0-9a-f]{8}$`, name)
		require.Eventually(t, func() bool {
			_, err := kc.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			return err == nil
		}, time.Minute, time.Second, "Node %s registered", name)

		r = play(idVars, "-l", "node1,node2,node4", "-v")
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node4": 0}, r.changed(), r.output)
		assert.Contains(t, section(r.output, "Configure k3s, install it"), `"node_name": "`+name+`"`, "k3s_config knows the name")
		assert.Contains(t, r.output, name+" Ready")

		r = run("remove_node.yml", idVars, "-l", "node4")
		require.NoError(t, r.err, r.output)
		_, err = kc.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "Node %s deleted: %v", name, err)
	})

	// An AWX job, or another machine's clone of the project, has no .generated/kubeconfig (it is
	// never committed): remove_node reads the admin kubeconfig from the first controller into a
	// temporary directory of its own, outside the project, and removes it when done.
	t.Run("from a fresh checkout", func(t *testing.T) {
		r := play(vars, "-l", "node1,node2,node4")
		require.NoError(t, r.err, r.output)
		checkout := t.TempDir()
		fresh := map[string]any{"k8s_cluster_kubeconfig_dest": filepath.Join(checkout, ".generated", "kubeconfig")}
		for k, v := range vars {
			if k != "k8s_cluster_kubeconfig_dest" {
				fresh[k] = v
			}
		}
		writeJSON(t, filepath.Join(dir, "fresh.json"), fresh)
		tmp := t.TempDir()
		r = h.c.playWith(t, []string{"TMPDIR=" + tmp}, "-i", b.Hosts.Inventory, filepath.Join(h.c.root, "playbooks", "remove_node.yml"),
			"-e", "@"+filepath.Join(dir, "fresh.json"), "-l", "node4", "-vvv")
		require.NoError(t, r.err, r.output)
		assert.Contains(t, r.output, "TASK [gitops.k3s_flux.k8s_cluster : Read the admin kubeconfig from a server, as k8s_cluster_kubeconfig_dest is missing, from node1]")
		kc, _, err := b.Clients()
		require.NoError(t, err)
		_, err = kc.CoreV1().Nodes().Get(context.Background(), "node4", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "Node node4 deleted: %v", err)
		assert.NoError(t, bare(b.Hosts.Host("node4")), "node4 bare")
		left, err := os.ReadDir(checkout)
		require.NoError(t, err)
		assert.Empty(t, left, "nothing written into the checkout")
		left, err = os.ReadDir(tmp)
		require.NoError(t, err)
		assert.Empty(t, left, "the kubeconfig read from node1 removed once done")
		// Its credentials, as k3s wrote them on node1, nowhere in -vvv.
		admin, err := b.Hosts.Host("node1").Exec("cat /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		for _, key := range []string{"client-certificate-data", "client-key-data"} {
			m := regexp.MustCompile(key + `: (\S+)`).FindStringSubmatch(admin)
			require.Len(t, m, 2, key)
			assert.NotContains(t, r.output, m[1], key)
		}
	})

	// A confirmed reset of one node takes that node back to bare and nothing else: the other
	// nodes keep k3s, the cluster keeps its kubeconfig.
	t.Run("partial reset", func(t *testing.T) {
		r := play(vars, "-l", "node1,node2,node4")
		require.NoError(t, r.err, r.output)
		r = reset("-l", "node4", "-e", "k8s_cluster_reset_confirmed=true")
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node4": 1}, r.changed(), r.output)
		assert.NoError(t, bare(b.Hosts.Host("node4")), "node4 bare")
		for _, h := range []string{"node1", "node2"} {
			assert.Error(t, bare(b.Hosts.Host(h)), "%s keeps k3s", h)
		}
		assert.FileExists(t, filepath.Join(dir, "kubeconfig"), "the cluster's kubeconfig stays")
	})
}
