package k3skubeconfig

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

// mergeArgs merges k3sYAML into dest as homelab, at 10.0.0.11.
func mergeArgs(dest string) map[string]any {
	return map[string]any{"content": k3sYAML, "dest": dest, "server": "https://10.0.0.11:6443", "cluster_name": "homelab", "merge": true, "_ansible_diff": true}
}

func absentArgs(dest string) map[string]any {
	return map[string]any{"dest": dest, "cluster_name": "homelab", "merge": true, "state": "absent", "_ansible_diff": true}
}

// userFile writes content as the user's own kubeconfig and returns its path.
func userFile(t *testing.T, content string) string {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(dest, []byte(content), 0o644))
	return dest
}

// unchanged asserts that dest still holds content, with the mode the test
// gave it, and that no backup was left beside it.
func unchanged(t *testing.T, dest, content string) {
	t.Helper()
	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, content, string(got), "left byte-identical")
	info, err := os.Stat(dest)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "mode left as it was")
	backups, _ := filepath.Glob(dest + ".*~")
	assert.Empty(t, backups)
}

func TestKubeconfigShape(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{name: "empty", in: ""},
		{name: "blank lines and comments", in: "\n# nothing yet\n"},
		{name: "an empty mapping", in: "{}\n"},
		{name: "kind Config alone", in: "apiVersion: v1\nkind: Config\n"},
		{name: "preferences alone", in: "preferences: {}\n"},
		{name: "a user's kubeconfig", in: workConfig},
		{name: "JSON kubeconfig", in: `{"apiVersion": "v1", "kind": "Config", "clusters": []}`},
		{name: "a compose file", in: "services:\n  web:\n    image: nginx\n", err: `top-level key "services"`},
		{name: "a package.json", in: `{"name": "app", "version": "1.0.0", "scripts": {}}`, err: `top-level key "name"`},
		{name: "notes", in: "notes: really\n", err: `top-level key "notes"`},
		{name: "a kubeconfig with a foreign key", in: workConfig + "notes: mine\n", err: `top-level key "notes"`},
		{name: "another kind", in: "apiVersion: v1\nkind: Pod\n", err: `kind "Pod"`},
		{name: "another apiVersion", in: "apiVersion: apps/v1\nkind: Config\n", err: `apiVersion "apps/v1"`},
		{name: "apiVersion alone", in: "apiVersion: v1\n", err: "neither kind: Config nor any of clusters, contexts, users, current-context, preferences"},
		{name: "a list", in: "- a\n- b\n", err: "not a mapping"},
		{name: "a scalar", in: "just text\n", err: "not a mapping"},
		{name: "two documents", in: workConfig + "---\n" + workConfig, err: "2 YAML documents"},
		{name: "does not parse", in: "clusters: [this is: not]: a kubeconfig\n", err: "does not parse"},
		{name: "clusters not a list", in: "clusters: homelab\n", err: "clusters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := kubeconfigShape([]byte(tc.in))
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// A file that is no kubeconfig is refused, whatever it is, and left as it
// was: merge used to replace any YAML or JSON mapping with a kubeconfig.
func TestMergeRefusesAFileThatIsNoKubeconfig(t *testing.T) {
	for name, content := range map[string]string{
		"a compose file": "services:\n  web:\n    image: nginx\n",
		"a package.json": "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\"\n}\n",
		"notes":          "notes: really\n",
	} {
		for _, state := range []string{"present", "absent"} {
			t.Run(name+" "+state, func(t *testing.T) {
				dest := userFile(t, content)
				args := mergeArgs(dest)
				if state == "absent" {
					args = absentArgs(dest)
				}
				res, code, _ := write(t, args)
				assert.Equal(t, 1, code)
				assert.Contains(t, res["msg"], "dest "+dest+" is not a kubeconfig")
				assert.Contains(t, res["msg"], "nothing was changed")
				unchanged(t, dest, content)
			})
		}
	}
}

func TestMergeMarksItsEntries(t *testing.T) {
	dest := userFile(t, workConfig)
	res, code, _ := write(t, mergeArgs(dest))
	require.Equal(t, 0, code, res["msg"])
	cfg, err := clientcmd.LoadFromFile(dest)
	require.NoError(t, err)
	assert.Contains(t, cfg.Clusters["homelab"].Extensions, markName)
	assert.Contains(t, cfg.AuthInfos["homelab"].Extensions, markName)
	assert.Contains(t, cfg.Contexts["homelab"].Extensions, markName)
	assert.Empty(t, cfg.Clusters["work"].Extensions, "the user's entries are not marked")
	raw, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "managed-by: gitops.k3s_flux")

	// kubectl keeps the mark: what client-go writes back still has it.
	again, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(again), "name: "+markName))
}

// homelabCluster, homelabUser and homelabContext are entries named like
// the cluster, as a user (or an older version of the collection) wrote them.
func homelabCluster(server string) string {
	return "- name: homelab\n  cluster:\n    server: " + server + "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString([]byte("ca cert")) + "\n"
}

func homelabUser(user string) string { return "- name: homelab\n  user:\n" + user }

const adminUser = "    client-certificate-data: Y2xpZW50IGNlcnQ=\n    client-key-data: b2xkIGtleQ==\n"

const tokenUser = "    token: homelab-own-token-1a2b3c\n"

func homelabContext(cluster, user string) string {
	return "- name: homelab\n  context:\n    cluster: " + cluster + "\n    user: " + user + "\n"
}

// userConfig is the user's work kubeconfig with more clusters, users and
// contexts added.
func userConfig(clusters, users, contexts string) string {
	return "apiVersion: v1\nkind: Config\ncurrent-context: work\nclusters:\n- name: work\n  cluster:\n    server: https://k8s.work.example:6443\n" + clusters +
		"users:\n- name: me@work\n  user:\n    token: " + workToken + "\n" + users +
		"contexts:\n- name: work\n  context:\n    cluster: work\n    user: me@work\n" + contexts
}

// An entry named like ours that it did not write is never replaced: the
// merge is refused naming it and what renames ours.
func TestMergeRefusesEntriesItDidNotWrite(t *testing.T) {
	for _, tc := range []struct {
		name, content, msg string
	}{
		{"a cluster of the user's at another address", userConfig(homelabCluster("https://192.168.1.5:6443"), "", ""), `cluster "homelab"`},
		{"the user's own token, beside the same cluster", userConfig(homelabCluster("https://10.0.0.11:6443"), homelabUser(tokenUser), homelabContext("homelab", "homelab")), `user "homelab"`},
		{"a user of the user's, no cluster", userConfig("", homelabUser(adminUser), ""), `user "homelab"`},
		{"a context of the user's", userConfig("", "", homelabContext("work", "me@work")), `context "homelab"`},
		{"a context of the user's, beside the same cluster", userConfig(homelabCluster("https://10.0.0.11:6443"), "", homelabContext("work", "me@work")), `context "homelab"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := userFile(t, tc.content)
			res, code, raw := write(t, mergeArgs(dest))
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			assert.Contains(t, res["msg"], "k8s_cluster_name")
			assert.Contains(t, res["msg"], "nothing was changed")
			assert.NotContains(t, raw, "homelab-own-token-1a2b3c")
			unchanged(t, dest, tc.content)
		})
	}
}

// Entries an older version wrote (no mark) at the same address with the
// same CA, a client certificate for a user, are taken over and marked.
func TestMergeAdoptsWhatAnOlderVersionWrote(t *testing.T) {
	old := userConfig(homelabCluster("https://10.0.0.11:6443"), homelabUser(adminUser), homelabContext("homelab", "homelab"))
	dest := userFile(t, old)
	res, code, _ := write(t, mergeArgs(dest))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Contains(t, strings.Join(anyStrings(res["warnings"]), "\n"), "took over")
	cfg, err := clientcmd.LoadFromFile(dest)
	require.NoError(t, err)
	assert.Contains(t, cfg.Clusters["homelab"].Extensions, markName)
	assert.Contains(t, cfg.AuthInfos["homelab"].Extensions, markName)
	assert.Contains(t, cfg.Contexts["homelab"].Extensions, markName)
	assert.Equal(t, []byte(k3sKey), cfg.AuthInfos["homelab"].ClientKeyData)
	backup, _ := res["backup_file"].(string)
	require.NotEmpty(t, backup, "the first merge into the file keeps it")
	kept, err := os.ReadFile(backup)
	require.NoError(t, err)
	assert.Equal(t, old, string(kept))
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

func TestMergeBacksUpTheFileFirst(t *testing.T) {
	dest := userFile(t, workConfig)

	res, code, _ := write(t, ansibletest.With(mergeArgs(dest), "_ansible_check_mode", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Nil(t, res["backup_file"], "check mode writes nothing")
	unchanged(t, dest, workConfig)

	res, code, _ = write(t, mergeArgs(dest))
	require.Equal(t, 0, code, res["msg"])
	backup, _ := res["backup_file"].(string)
	require.NotEmpty(t, backup)
	assert.True(t, strings.HasPrefix(backup, dest+"."), backup)
	assert.True(t, strings.HasSuffix(backup, "~"), backup)
	kept, err := os.ReadFile(backup)
	require.NoError(t, err)
	assert.Equal(t, workConfig, string(kept))
	info, err := os.Stat(backup)
	require.NoError(t, err)
	assert.Equal(t, fileMode, info.Mode().Perm())

	// Once its entries are there, a merge changes only them: no more copies.
	res, code, _ = write(t, ansibletest.With(mergeArgs(dest), "server", "https://10.0.0.12:6443"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Nil(t, res["backup_file"])
	backups, _ := filepath.Glob(dest + ".*~")
	assert.Len(t, backups, 1)

	// A new file has nothing to keep.
	res, code, _ = write(t, mergeArgs(filepath.Join(t.TempDir(), "config")))
	require.Equal(t, 0, code, res["msg"])
	assert.Nil(t, res["backup_file"])
}

// kubeloginUser is a user with kubelogin's documented exec setup: its
// client secret is in the args.
const kubeloginSecret = "kubelogin-client-secret-9z8y"

const kubeloginUser = `- name: oidc
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubectl
      args:
      - oidc-login
      - get-token
      - --oidc-issuer-url=https://issuer.example
      - --oidc-client-id=kube
      - --oidc-client-secret=` + kubeloginSecret + `
      env:
      - name: HTTPS_PROXY
        value: http://proxy.example:3128
`

// The merge's diff shows its own entries only, never the user's others.
func TestMergeDiffShowsOnlyItsEntries(t *testing.T) {
	dest := userFile(t, userConfig("", kubeloginUser, ""))
	for _, args := range []map[string]any{mergeArgs(dest), absentArgs(dest)} {
		res, code, raw := write(t, args)
		require.Equal(t, 0, code, res["msg"])
		diff := res["diff"].(map[string]any)
		shown := diff["before"].(string) + diff["after"].(string)
		assert.Contains(t, shown, "homelab")
		for _, theirs := range []string{"k8s.work.example", "me@work", "oidc", "proxy.example", kubeloginSecret, workToken} {
			assert.NotContains(t, shown, theirs)
		}
		assert.NotContains(t, raw, kubeloginSecret)
		assert.NotContains(t, raw, workToken)
		noSecret(t, raw)
	}
}

// A whole file replaced (no merge) shows what it held, exec args and env
// values redacted.
func TestWriteDiffRedactsExec(t *testing.T) {
	dest := userFile(t, userConfig("", kubeloginUser, ""))
	res, code, raw := write(t, map[string]any{"content": k3sYAML, "dest": dest, "_ansible_diff": true})
	require.Equal(t, 0, code, res["msg"])
	before := res["diff"].(map[string]any)["before"].(string)
	assert.Contains(t, before, "oidc")
	assert.NotContains(t, before, kubeloginSecret)
	assert.NotContains(t, before, "proxy.example")
	assert.NotContains(t, raw, kubeloginSecret)
}

// state=absent removes its own entries only: an unmarked one is left (and
// said), the user's current context is kept, and a context of the user's
// that used its cluster is named.
func TestAbsentRemovesOnlyItsOwn(t *testing.T) {
	t.Run("after a merge", func(t *testing.T) {
		dest := userFile(t, userConfig("", "", "- name: homelab-ro\n  context:\n    cluster: homelab\n    user: me@work\n"))
		res, code, _ := write(t, mergeArgs(dest))
		require.Equal(t, 0, code, res["msg"])

		res, code, _ = write(t, absentArgs(dest))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Contains(t, strings.Join(anyStrings(res["warnings"]), "\n"), `context "homelab-ro" uses cluster "homelab"`)
		cfg, err := clientcmd.LoadFromFile(dest)
		require.NoError(t, err)
		assert.NotContains(t, cfg.Clusters, "homelab")
		assert.NotContains(t, cfg.AuthInfos, "homelab")
		assert.NotContains(t, cfg.Contexts, "homelab")
		assert.Contains(t, cfg.Contexts, "homelab-ro", "the user's context is the user's")
		assert.Contains(t, cfg.AuthInfos, "me@work")
		assert.Equal(t, "work", cfg.CurrentContext)
	})
	t.Run("its context current", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "config")
		res, code, _ := write(t, mergeArgs(dest))
		require.Equal(t, 0, code, res["msg"])
		res, code, _ = write(t, absentArgs(dest))
		require.Equal(t, 0, code, res["msg"])
		cfg, err := clientcmd.LoadFromFile(dest)
		require.NoError(t, err)
		assert.Equal(t, "", cfg.CurrentContext)
	})
	t.Run("entries it did not write", func(t *testing.T) {
		content := strings.Replace(userConfig(homelabCluster("https://10.0.0.11:6443"), homelabUser(tokenUser), homelabContext("homelab", "homelab")),
			"current-context: work", "current-context: homelab", 1)
		dest := userFile(t, content)
		res, code, raw := write(t, absentArgs(dest))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Contains(t, strings.Join(anyStrings(res["warnings"]), "\n"), `cluster "homelab"`)
		assert.NotContains(t, raw, "homelab-own-token-1a2b3c")
		unchanged(t, dest, content)
	})
}
