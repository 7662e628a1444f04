//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// TestRealK3sSingleServer: one server from bare with k3s's own install.sh
// and the k3s built from its source; the second run changes nothing.
func TestRealK3sSingleServer(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sr1", Subnet: "10.213.30", Controllers: 1, RealK3s: true})
	node1 := b.Hosts.Host("node1")
	dir := t.TempDir()
	args := clusterPlayArgs(t, c, b, dir, nil)

	r := c.play(t, args...)
	require.NoError(t, r.err, r.output)
	version, err := node1.Exec("k3s --version")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(version, "k3s version "+b.Real.Version+" "), version)
	help, err := node1.Exec("k3s etcd-snapshot save --help")
	require.NoError(t, err)
	assert.Contains(t, help, "--etcd-s3-bucket", "the real k3s's help")
	unit, err := node1.Exec("cat /etc/systemd/system/k3s.service")
	require.NoError(t, err)
	assert.Contains(t, unit, "Type=notify", "the unit k3s's install.sh wrote")

	r = c.play(t, args...)
	require.NoError(t, r.err, r.output)
	assert.Equal(t, map[string]int{"node1": 0, "localhost": 0}, r.changed(), r.output)
	// Every certificate real k3s wrote read (one it could not parse fails the task), none near its expiry.
	assert.NotContains(t, r.output, "k3s's certificate", "a new cluster's certificates have a year left")

	outer := t // plays run in its temporary directory: a subtest's long name makes ssh's socket path too long
	t.Run("a certificate near its expiry is warned about, naming it and how to renew it", func(t *testing.T) {
		// k3s reads its certificates from its data dir: a short-lived one beside them.
		const path = "/var/lib/rancher/k3s/server/tls/zz-e2e-short-lived.crt"
		notAfter := time.Now().Add(10*24*time.Hour + time.Hour).UTC()
		cert, err := pki.SelfSigned("e2e-short-lived", notAfter)
		require.NoError(t, err)
		_, err = node1.Exec("printf '%s' '" + string(cert) + "' >" + path)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = node1.Exec("rm -f " + path) })
		r := c.play(outer, args...)
		require.NoError(t, r.err, r.output)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, `k3s's certificate "e2e-short-lived" (`+path+`) expires on `+notAfter.Format("2006-01-02")+
			`, in 10 days (certificate_warning_days is 90). k3s renews a server's certificates when it starts within 120 days of their expiry, `+
			`an agent's at every start: restart k3s on each node, one at a time, before then to renew it`, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "localhost": 0}, r.changed(), "a warning, no change: %s", r.output)
	})

	// plays run in its temporary directory: a subtest's long name makes ssh's socket path too long
	t.Run("a changed token is refused by k3s_node first, and by k3s itself", func(t *testing.T) {
		const other = "another-cluster-token-5e1f"
		r := c.play(outer, clusterPlayArgs(t, c, b, dir, map[string]any{"k8s_cluster_token": other})...)
		require.Error(t, r.err, r.output)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "k3s_config.token is another secret than the one this server's datastore was bootstrapped with (/var/lib/rancher/k3s/server/token)")
		assert.NotContains(t, r.output, other)
		// What k3s_node keeps from happening: the token changed behind its back.
		since, err := node1.Exec("date +%s")
		require.NoError(t, err)
		_, err = node1.Exec("printf 'token: " + other + "\\n' >/etc/rancher/k3s/config.yaml.d/50-token.yaml && systemctl restart --no-block k3s")
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			journal, err := node1.Exec("journalctl -u k3s --since @" + strings.TrimSpace(since) + " -o cat")
			assert.NoError(c, err)
			assert.Contains(c, journal, "bootstrap data already found and encrypted with different token")
		}, 2*time.Minute, time.Second, "k3s refuses the other token")
		_, err = node1.Exec("rm /etc/rancher/k3s/config.yaml.d/50-token.yaml && systemctl restart k3s")
		require.NoError(t, err)
		r = c.play(outer, clusterPlayArgs(t, c, b, dir, nil)...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "localhost": 0}, r.changed(), r.output)
	})

	t.Run("tls-san and bind-address, in k3s's own serving certificate and listener", func(t *testing.T) {
		config := map[string]any{"k8s_cluster_server_config": map[string]any{"tls-san": []string{"k3s-api.home.arpa"}, "bind-address": node1.Addr}}
		r := c.play(outer, clusterPlayArgs(t, c, b, dir, config)...)
		require.NoError(t, r.err, r.output)
		conn, err := tls.Dial("tcp", net.JoinHostPort(node1.Addr, "6443"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the certificate, not trusting it
		require.NoError(t, err)
		leaf := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		assert.Contains(t, leaf.DNSNames, "k3s-api.home.arpa", "the API endpoint's name in k3s's serving certificate")
		// k3s listens on the loopback too (pkg/cluster/https.go, util.ListenWithLoopback): the
		// stand-in had it answer on the bind-address alone.
		_, err = node1.Exec("curl -sk --max-time 5 https://127.0.0.1:6443/ping")
		assert.NoError(t, err, "the loopback answers too")
		kubeconfig, err := node1.Exec("cat /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		assert.Contains(t, kubeconfig, "server: https://"+node1.Addr+":6443", "k3s's kubeconfig names the bind-address")
		r = c.play(outer, clusterPlayArgs(t, c, b, dir, config)...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "localhost": 0}, r.changed(), r.output)
	})
}

// TestRealK3sEmbeddedEtcd: three real servers with embedded etcd, joined in
// order, their snapshots uploaded to a real S3 server (etcd-s3 in the
// servers' config), a restore that brings back what was deleted after the
// snapshot with those settings still in the config, and a rebuilt server
// other than the first that joins again.
// realK3sInOnePass runs a subtest of TestRealK3sEmbeddedEtcd in one pass only: the one with
// pipelining on (ansible-core 2.19) when pipelined, else the one with it off (2.14). The other pass
// skips it, saying so: it runs the subtest's plays against the stand-in k3s in the tests named by
// standIn. Three real k3s servers are most of an e2e run's CPU, and that test ended each pass; the
// one-pass subtests are shared out so that both passes end about together. Only the joins and a
// snapshot run whole in both; the rotations' --check runs in both (realK3sRestInOnePass).
func realK3sInOnePass(t *testing.T, pipelined bool, standIn string) {
	t.Helper()
	if pipelining() != pipelined {
		t.Skipf("shown on real k3s in the pass with pipelining %s; this pass runs its plays in %s", passName(pipelined), standIn)
	}
}

// realK3sRestInOnePass tells whether the rest of a subtest of TestRealK3sEmbeddedEtcd runs in this
// pass, as realK3sInOnePass does for a whole one; the other pass logs that it stops there, having
// run what is before (a play's --check, which changes nothing, and its refusals) with its own
// ansible-core.
func realK3sRestInOnePass(t *testing.T, pipelined bool, rest string) bool {
	t.Helper()
	if pipelining() != pipelined {
		t.Logf("%s: shown on real k3s in the pass with pipelining %s", rest, passName(pipelined))
		return false
	}
	return true
}

func passName(pipelined bool) string { return map[bool]string{true: "on", false: "off"}[pipelined] }

func TestRealK3sEmbeddedEtcd(t *testing.T) {
	// Beside the other tests of its pass (it is the longest, mostly waiting on k3s). Under that
	// load k3s's own restore once failed: during --cluster-reset two of its goroutines each
	// defragment etcd (pkg/etcd/etcd.go Reset's poll and embed.go's test loop, both
	// Test(ctx, true)), and one copies the etcd directory (store.NewTemporaryStore) while the
	// other's defrag renames member/snap/db.tmp.N away: "failed to create temporary datastore
	// client: open .../db.tmp.N: no such file or directory". A k3s race that a loaded Pi can meet
	// too, which k3s_etcd_restore now runs the reset again for (defragRace).
	parallel(t, true)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sr3", Subnet: "10.213.31", Controllers: 3, RealK3s: true, S3: true})
	dir := t.TempDir()
	const folder = "cluster-a"
	base := map[string]any{"k8s_cluster_server_config": b.S3.Config(folder)}
	run := func(playbook string, extra map[string]any, args ...string) playResult {
		vars := map[string]any{}
		for k, v := range base {
			vars[k] = v
		}
		for k, v := range extra {
			vars[k] = v
		}
		a := clusterPlayArgs(t, c, b, dir, vars)
		a[2] = filepath.Join(c.root, "playbooks", playbook)
		return c.play(t, append(a, args...)...)
	}
	ctx := t.Context()
	everyone := map[string]int{"node1": 0, "node2": 0, "node3": 0, "localhost": 0}
	etcdMembers := func() []string {
		kc, _, err := b.Clients()
		require.NoError(t, err)
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var members []string
		for _, n := range nodes.Items {
			// Set by k3s's own etcd metadata controller on a member's Node.
			if n.Labels["node-role.kubernetes.io/etcd"] == "true" && n.Annotations["etcd.k3s.cattle.io/node-name"] != "" {
				members = append(members, n.Name)
			}
		}
		slices.Sort(members)
		return members
	}

	t.Run("three servers join in order", func(t *testing.T) {
		r := run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, []string{"node1", "node2", "node3"}, etcdMembers())
		}, time.Minute, time.Second, "k3s made each server an etcd member")
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})

	t.Run("certificates due are rotated, one server at a time, the API answering", func(t *testing.T) {
		node1 := b.Hosts.Host("node1")
		kubeconfig := filepath.Join(dir, "kubeconfig")
		// k3s reads its certificates from its data dir: node1's admin client certificate replaced by
		// one that expires in 30 days, one k3s certificate rotate removes (the running k3s keeps the
		// old in memory).
		const adminCert = "/var/lib/rancher/k3s/server/tls/client-admin.crt"
		notAfter := time.Now().Add(30*24*time.Hour + time.Hour).UTC()
		short, err := pki.SelfSigned("system:admin", notAfter)
		require.NoError(t, err)
		own, err := node1.Exec("cat " + adminCert)
		require.NoError(t, err)
		_, err = node1.Exec("printf '%s' '" + string(short) + "' >" + adminCert)
		require.NoError(t, err)
		before, err := os.ReadFile(kubeconfig)
		require.NoError(t, err)
		// The first server, and the kubeconfig renewed (run_once, on the first host).
		rotated := map[string]int{"node1": 2, "node2": 0, "node3": 0}

		r := run("rotate_certs.yml", nil, "--check", "--diff")
		require.NoError(t, r.err, r.output)
		assert.Equal(t, rotated, r.changed(), r.output)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), `(restarted with new certificates: the first to expire, "system:admin" (`+adminCert+
			`), expires on `+notAfter.Format("2006-01-02")+`, in 30 days)`, "the diff says why: %s", r.output)
		assert.Equal(t, notAfter.Truncate(time.Second), certNotAfter(t, node1, adminCert), "--check rotated nothing")
		if !realK3sRestInOnePass(t, true, "the rotation") {
			// k3s's own certificate back (certutil.WriteCert's mode), for the restarts to come.
			require.NoError(t, node1.WriteFile(adminCert, []byte(own), 0o644))
			return
		}

		// Asked on node2 while node1's k3s restarts.
		answers := watchAPI(t, kubeconfig, b.Hosts.Host("node2").Addr)
		r = run("rotate_certs.yml", nil)
		failures := answers()
		require.NoError(t, r.err, r.output)
		assert.Empty(t, failures, "the API on node2 answered throughout")
		assert.Equal(t, rotated, r.changed(), r.output)
		assert.Greater(t, time.Until(certNotAfter(t, node1, adminCert)), 360*24*time.Hour, "k3s made a new one, valid a year")
		backups, err := node1.Exec("ls -d /var/lib/rancher/k3s/server/tls-*")
		require.NoError(t, err, "k3s kept the old ones aside")
		assert.Len(t, strings.Fields(backups), 1)
		after, err := os.ReadFile(kubeconfig)
		require.NoError(t, err)
		assert.NotEqual(t, string(before), string(after), "the kubeconfig has k3s's new admin certificate")
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		require.NoError(t, err)
		kc, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		assert.NoError(t, err, "and it works")

		r = run("rotate_certs.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0}, r.changed(), "nothing due any more: %s", r.output)
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})

	t.Run("a rolling upgrade to another build", func(t *testing.T) {
		realK3sInOnePass(t, true, "TestSnapshotBeforeRollingUpgrade")
		upgrade := map[string]any{"k8s_cluster_k3s_version": b.Real.UpgradeVersion}
		r := run("k8s.yml", upgrade)
		require.NoError(t, r.err, r.output)
		for _, name := range []string{"node1", "node2", "node3"} {
			version, err := b.Hosts.Host(name).Exec("k3s --version")
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(version, "k3s version "+b.Real.UpgradeVersion+" "), "%s: %s", name, version)
		}
		// The snapshot before it, taken and listed from k3s's own output (its S3 copy listed too).
		assert.Regexp(t, `Snapshot pre-upgrade-\S+-node1-\d+ on node1: file://`+snapshotDir, strings.Join(strings.Fields(r.output), " "))
		assert.Equal(t, []string{"node1", "node2", "node3"}, etcdMembers())
		base["k8s_cluster_k3s_version"] = b.Real.UpgradeVersion
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})

	var snapshot string
	t.Run("a snapshot with etcd-s3 is reported as the node's copy", func(t *testing.T) {
		kc, _, err := b.Clients()
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		r := run("snapshot.yml", map[string]any{"k8s_cluster_snapshot_name": "before"})
		require.NoError(t, r.err, r.output)
		snapshot = snapshotNamed(t, b.Hosts.Host("node1"), "before")
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "Snapshot "+snapshot+" on node1: file://"+snapshotDir+"/"+snapshot+".")
		objects, err := b.S3.Objects(folder)
		require.NoError(t, err)
		assert.Contains(t, objects, folder+"/"+snapshot, "k3s uploaded it")
		assert.NotContains(t, r.output, b.S3.SecretKey)
	})

	// One restore serves two claims (a restore is the longest step here): a snapshot from before the
	// token's rotation restores with the token it was taken under, and etcd-s3 in the servers'
	// config does not keep it from bringing back what was deleted after it.
	t.Run("the cluster token rotated, the old one refused, a snapshot from before restored with it, etcd-s3 in the config", func(t *testing.T) {
		require.NotEmpty(t, snapshot)
		servers := []string{"node1", "node2", "node3"}
		node1 := b.Hosts.Host("node1")
		storedSecret := func(name string) string { return storedClusterSecret(t, b.Hosts.Host(name)) }
		oldToken, err := node1.Exec("cat /var/lib/rancher/k3s/server/token")
		require.NoError(t, err)
		oldToken = strings.TrimSpace(oldToken)
		oldSecret := storedSecret("node1")
		ca, err := node1.Exec("cat /var/lib/rancher/k3s/server/tls/server-ca.crt")
		require.NoError(t, err)
		newToken := "rotated-" + strings.ToLower(rand.Text())
		rotate := map[string]any{"k8s_cluster_new_token": newToken}
		secrets := []string{oldSecret, newToken}

		r := run("rotate_token.yml", rotate, "--check", "--diff", "-vvv")
		require.NoError(t, r.err, r.output)
		for _, name := range servers {
			assert.Positive(t, r.changed()[name], "%s would change: %s", name, r.output)
			assert.Equal(t, oldSecret, storedSecret(name), "--check rotated nothing on %s", name)
		}
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "(with the cluster's new token, rotated here)")
		assertNoSecret(t, r.output, secrets...)
		if !realK3sRestInOnePass(t, true, "the rotation and the restore under the old token") {
			return
		}

		r = run("rotate_token.yml", rotate, "--diff", "-vvv")
		require.NoError(t, r.err, r.output)
		assertNoSecret(t, r.output, secrets...)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "The cluster token was rotated on node1: set k8s_cluster_token to the new token")
		for _, name := range servers {
			assert.Positive(t, r.changed()[name], "%s restarted with it: %s", name, r.output)
			assert.Equal(t, newToken, storedSecret(name), "k3s on %s runs with the new token", name)
			assert.Equal(t, http.StatusUnauthorized, supervisorAnswers(t, b.Hosts.Host(name), ca, oldSecret), "%s refuses the old token", name)
			assert.Equal(t, http.StatusOK, supervisorAnswers(t, b.Hosts.Host(name), ca, newToken), "%s accepts the new one", name)
		}
		assert.Equal(t, []string{"node1", "node2", "node3"}, etcdMembers())

		r = run("rotate_token.yml", rotate)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0}, r.changed(), "rotated already: %s", r.output)
		// The old token refused by the k8s play too, before anything is written.
		r = run("k8s.yml", map[string]any{"k8s_cluster_token": oldToken}, "-vvv")
		require.Error(t, r.err, r.output)
		assertNoSecret(t, r.output, append(secrets, oldToken)...)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "k3s_config.token is another secret than the one this server's datastore was bootstrapped with")
		base["k8s_cluster_token"] = newToken
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)

		// A snapshot taken before the rotation restores with the token it was taken under; the
		// cluster then runs on that one again (k3s's own token, the k8s play's token unset).
		kc, _, err := b.Clients()
		require.NoError(t, err)
		require.NoError(t, kc.CoreV1().ConfigMaps("default").Delete(ctx, "kept", metav1.DeleteOptions{}))
		_, err = kc.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made-after"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		delete(base, "k8s_cluster_token")
		r = run("restore.yml", map[string]any{"k8s_cluster_restore_snapshot": snapshot, "k8s_cluster_restore_confirmed": true, "k8s_cluster_restore_token": oldToken}, "-vvv")
		require.NoError(t, r.err, r.output)
		assertNoSecret(t, r.output, secrets...)
		kc, _, err = b.Clients()
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
		assert.NoError(t, err, "deleted after the snapshot, back")
		_, err = kc.CoreV1().ConfigMaps("default").Get(ctx, "made-after", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "made after the snapshot, gone: %v", err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, []string{"node1", "node2", "node3"}, etcdMembers())
		}, time.Minute, time.Second, "the others joined the restored one")
		assert.Equal(t, oldSecret, storedSecret("node1"))
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})

	// k3s's secrets-encrypt handlers need what k3s's agent gives a server (NODE_NAME, the Node's
	// encryption hash annotation); the bed plays that part for its agentless servers
	// (tests/bed/realk3s.go, annotateEncryption), and k3s's own status and rotation run as they are.
	t.Run("secrets encryption turned on for the running cluster, its keys rotated, a Secret written before read after", func(t *testing.T) {
		node1 := b.Hosts.Host("node1")
		servers := []string{"node1", "node2", "node3"}
		const value = "plain-before-encryption-4711"
		kc, _, err := b.Clients()
		require.NoError(t, err)
		_, err = kc.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "written-before"},
			StringData: map[string]string{"value": value}}, metav1.CreateOptions{})
		require.NoError(t, err)
		// stored is the Secret as etcd holds it now (a snapshot would also hold etcd's older
		// revisions until it compacts and defragments).
		stored := func() string { return etcdValue(t, node1, "/registry/secrets/default/written-before") }
		// status is k3s's own `k3s secrets-encrypt status` on a server, flattened.
		status := func(name string) string {
			out, err := b.Hosts.Host(name).Exec("k3s secrets-encrypt status")
			require.NoError(t, err, out)
			return strings.Join(strings.Fields(out), " ")
		}
		activeKey := regexp.MustCompile(`AES-CBC (aescbckey\S*)`)
		require.Contains(t, stored(), value, "without encryption, etcd holds the Secret in the clear")

		base["k8s_cluster_secrets_encryption"] = true
		r := run("k8s.yml", nil, "--check", "--diff")
		require.NoError(t, r.err, r.output)
		for _, name := range servers {
			assert.Positive(t, r.changed()[name], "%s would change: %s", name, r.output)
		}
		assert.Contains(t, status("node1"), "Encryption Status: Disabled, no configuration file found", "--check changed nothing")
		if !realK3sRestInOnePass(t, false, "turning it on and rotating its keys") {
			delete(base, "k8s_cluster_secrets_encryption")
			r = run("rotate_encryption_keys.yml", nil)
			require.Error(t, r.err, r.output)
			assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "Secrets encryption is off (k8s_cluster_secrets_encryption): turn it on with the k8s play first")
			return
		}

		r = run("k8s.yml", nil, "--diff")
		require.NoError(t, r.err, r.output)
		var key string
		for _, name := range servers {
			st := status(name)
			assert.Contains(t, st, "Encryption Status: Enabled", name)
			assert.Contains(t, st, "Current Rotation Stage: reencrypt_finished", name)
			assert.Contains(t, st, "Server Encryption Hashes: All hashes match", name)
			m := activeKey.FindStringSubmatch(st)
			require.NotNil(t, m, "%s: %s", name, st)
			if key == "" {
				key = m[1]
			}
			assert.Equal(t, key, m[1], "%s writes Secrets with the first controller's key", name)
		}
		assert.True(t, strings.HasPrefix(stored(), "k8s:enc:aescbc:v1:"+key+":"), "written again with the key: %q", stored())
		assert.NotContains(t, stored(), value)
		got, err := kc.CoreV1().Secrets("default").Get(ctx, "written-before", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, value, string(got.Data["value"]), "the Secret written before, read after")

		// The play's second run, that it changes nothing, comes after the rotation below: enabled
		// and rotated, a server's config and state are what enabling alone leaves.
		r = run("rotate_encryption_keys.yml", nil, "--check", "--diff")
		require.NoError(t, r.err, r.output)
		assert.Contains(t, status("node1"), key, "--check rotated nothing")
		r = run("rotate_encryption_keys.yml", nil, "-vvv")
		require.NoError(t, r.err, r.output)
		// Never a key, old or new, nor the cluster secret the supervisor is asked with.
		config, err := node1.Exec("cat /var/lib/rancher/k3s/server/cred/encryption-config.json")
		require.NoError(t, err)
		keys := regexp.MustCompile(`"secret":"([^"]+)"`).FindAllStringSubmatch(config, -1)
		require.NotEmpty(t, keys)
		secrets := []string{storedClusterSecret(t, node1)}
		for _, k := range keys {
			secrets = append(secrets, k[1])
		}
		assertNoSecret(t, r.output, secrets...)
		var rotated string
		for _, name := range servers {
			m := activeKey.FindStringSubmatch(status(name))
			require.NotNil(t, m, name)
			if rotated == "" {
				rotated = m[1]
			}
			assert.Equal(t, rotated, m[1], "%s took the new key", name)
		}
		assert.NotEqual(t, key, rotated, "a new key")
		assert.True(t, strings.HasPrefix(stored(), "k8s:enc:aescbc:v1:"+rotated+":"), "written again with the new key: %q", stored())
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "every server writes Secrets with AES-CBC "+rotated)
		got, err = kc.CoreV1().Secrets("default").Get(ctx, "written-before", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, value, string(got.Data["value"]))
		assert.Equal(t, []string{"node1", "node2", "node3"}, etcdMembers())
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)

		// Turning it off by leaving the variable out is refused: k3s could not read the Secrets.
		delete(base, "k8s_cluster_secrets_encryption")
		r = run("k8s.yml", nil)
		require.Error(t, r.err, r.output)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "this server's Secrets are encrypted")
		base["k8s_cluster_secrets_encryption"] = true
	})

	t.Run("a rebuilt server other than the first joins again", func(t *testing.T) {
		realK3sInOnePass(t, false, "TestHAReset and TestSnapshotBeforeRemoval")
		r := run("reset.yml", nil, "-l", "node3", "-e", "k8s_cluster_reset_confirmed=true")
		require.NoError(t, r.err, r.output)
		_, err := b.Hosts.Host("node3").Exec("test ! -e /usr/local/bin/k3s && test ! -e /var/lib/rancher/k3s")
		require.NoError(t, err, "node3 bare")
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, []string{"node1", "node2", "node3"}, etcdMembers())
		}, time.Minute, time.Second, "node3 a member again")
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})

	t.Run("a rebuilt first controller joins again", func(t *testing.T) {
		realK3sInOnePass(t, true, "TestRebuildFirstControllerRejoins")
		r := run("reset.yml", nil, "-l", "node1", "-e", "k8s_cluster_reset_confirmed=true")
		require.NoError(t, r.err, r.output)
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		cfg, err := b.Hosts.Host("node1").Exec("cat /etc/rancher/k3s/config.yaml")
		require.NoError(t, err)
		assert.Contains(t, cfg, "server: https://"+b.Hosts.Host("node2").Addr+":6443", "joined node2, the first running controller")
		assert.NotContains(t, cfg, "cluster-init", "no second cluster")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, []string{"node1", "node2", "node3"}, etcdMembers())
		}, time.Minute, time.Second, "node1 a member again")
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})

	t.Run("a snapshot restored after every server was reset and rebuilt", func(t *testing.T) {
		realK3sInOnePass(t, false, "TestRestoreSnapshot and TestHAReset")
		node1 := b.Hosts.Host("node1")
		kc, _, err := b.Clients()
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		r := run("snapshot.yml", map[string]any{"k8s_cluster_snapshot_name": "disaster"})
		require.NoError(t, r.err, r.output)
		taken := snapshotNamed(t, node1, "disaster")
		// What a careful owner keeps off the servers: the snapshot and the token it was taken under.
		saved, err := node1.Exec("base64 -w0 " + snapshotDir + "/" + taken)
		require.NoError(t, err)
		oldToken, err := node1.Exec("cat /var/lib/rancher/k3s/server/token")
		require.NoError(t, err)
		oldToken = strings.TrimSpace(oldToken)

		r = run("reset.yml", nil, "-e", "k8s_cluster_reset_confirmed=true")
		require.NoError(t, r.err, r.output)
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		// Secrets encryption still asked for (the subtest above): the new cluster starts with it.
		// k3s answers its status once the bed has set the Node's hash annotation.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			out, err := node1.Exec("k3s secrets-encrypt status")
			assert.NoError(c, err, out)
			assert.Contains(c, strings.Join(strings.Fields(out), " "), "Encryption Status: Enabled")
		}, 5*time.Minute, time.Second, "a new cluster starts with secrets encryption")
		newToken, err := node1.Exec("cat /var/lib/rancher/k3s/server/token")
		require.NoError(t, err)
		require.NotEqual(t, oldToken, strings.TrimSpace(newToken), "a new cluster, a new token")
		raw, err := base64.StdEncoding.DecodeString(saved)
		require.NoError(t, err)
		_, err = node1.Exec("mkdir -p -m 700 " + snapshotDir)
		require.NoError(t, err)
		require.NoError(t, node1.WriteFile(snapshotDir+"/"+taken, raw, 0o600))

		restore := map[string]any{"k8s_cluster_restore_snapshot": taken, "k8s_cluster_restore_confirmed": true}
		r = run("restore.yml", restore)
		require.Error(t, r.err, r.output)
		assert.Contains(t, strings.Join(strings.Fields(r.output), " "), "was taken on a cluster with another token than this server's own token (/var/lib/rancher/k3s/server/token): it holds no bootstrap data for it")
		state, err := node1.Exec("systemctl is-active k3s")
		require.NoError(t, err, "refused before anything stopped")
		assert.Equal(t, "active\n", state)

		restore["k8s_cluster_restore_token"] = oldToken
		r = run("restore.yml", restore)
		require.NoError(t, r.err, r.output)
		assert.NotContains(t, r.output, oldToken)
		kc, _, err = b.Clients()
		require.NoError(t, err)
		_, err = kc.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
		assert.NoError(t, err, "the old cluster's ConfigMap, back")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, []string{"node1", "node2", "node3"}, etcdMembers())
		}, time.Minute, time.Second, "the rebuilt servers joined the restored one")
		r = run("k8s.yml", nil)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, everyone, r.changed(), r.output)
	})
}

// etcdValue is key's value in the etcd of host's k3s server, read on the
// host through etcd's JSON gateway (POST /v3/kv/range), which k3s serves on
// the loopback only, on port 2382 (pkg/etcd/etcd.go, listenClientHTTPURLs;
// 2379 serves gRPC alone), with k3s's own etcd client certificate; "" when
// there is none.
func etcdValue(t *testing.T, host *testhosts.Host, key string) string {
	t.Helper()
	const tlsDir = "/var/lib/rancher/k3s/server/tls/etcd/"
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	out, err := host.Exec("curl -sS --fail --cacert " + tlsDir + "server-ca.crt --cert " + tlsDir + "client.crt --key " + tlsDir + "client.key" +
		" -H 'Content-Type: application/json' -d '" + string(body) + "' https://127.0.0.1:2382/v3/kv/range")
	require.NoError(t, err, out)
	var got struct {
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	if len(got.KVs) == 0 {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(got.KVs[0].Value)
	require.NoError(t, err)
	return string(raw)
}

// storedClusterSecret is the password of the token host's k3s server runs
// with (its server/token).
func storedClusterSecret(t *testing.T, host *testhosts.Host) string {
	t.Helper()
	raw, err := host.Exec("cat /var/lib/rancher/k3s/server/token")
	require.NoError(t, err)
	_, secret, found := strings.Cut(strings.TrimSpace(raw), "::server:")
	require.True(t, found, "k3s's server/token is K10<hash>::server:<secret>")
	return secret
}

// assertNoSecret fails the test for each secret that output holds.
func assertNoSecret(t *testing.T, output string, secrets ...string) {
	t.Helper()
	for i, secret := range secrets {
		// Not NotContains: its failure would print the whole output.
		assert.False(t, strings.Contains(output, secret), "secret %d of %d shown in the output", i+1, len(secrets))
	}
}

// supervisorAnswers is the status k3s's supervisor on host answers a
// request only the cluster's current token passes (user "server"), over
// TLS that trusts the cluster's server CA alone.
func supervisorAnswers(t *testing.T, host *testhosts.Host, ca, secret string) int {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM([]byte(ca)))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+net.JoinHostPort(host.Addr, "6443")+"/v1-k3s/encrypt/status", nil)
	require.NoError(t, err)
	req.SetBasicAuth("server", secret)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// certNotAfter is when the certificate at path on host expires.
func certNotAfter(t *testing.T, host *testhosts.Host, path string) time.Time {
	t.Helper()
	raw, err := host.Exec("cat " + path)
	require.NoError(t, err)
	block, _ := pem.Decode([]byte(raw))
	require.NotNil(t, block, "%s holds no PEM certificate", path)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert.NotAfter.UTC()
}

// watchAPI asks the API on addr (with kubeconfig's credentials) for the
// default namespace every half second until the returned function is
// called, which returns the requests that failed meanwhile. Each request
// may take apiTry: while a server restarts, etcd may elect another leader,
// and k3s's API waits for it.
func watchAPI(t *testing.T, kubeconfig, addr string) func() []string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cfg.Host = "https://" + net.JoinHostPort(addr, "6443")
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const apiTry = 30 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []string)
	go func() {
		var failures []string
		var asked int
		var slowest time.Duration
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			try, stop := context.WithTimeout(ctx, apiTry)
			start := time.Now()
			_, err := kc.CoreV1().Namespaces().Get(try, "default", metav1.GetOptions{})
			took := time.Since(start)
			stop()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				failures = append(failures, fmt.Sprintf("%s (after %s): %v", start.Format(time.TimeOnly), took.Round(time.Millisecond), err))
			default:
				asked++
				slowest = max(slowest, took)
			}
			select {
			case <-ctx.Done():
				t.Logf("the API on %s answered %d requests, the slowest in %s", addr, asked, slowest.Round(time.Millisecond))
				done <- failures
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		cancel()
		return <-done
	}
}
