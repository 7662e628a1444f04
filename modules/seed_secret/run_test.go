package seedsecret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// seedOn runs the module against the in-memory cluster.
func seedOn(t *testing.T, c *kubetest.Cluster, args map[string]any) (map[string]any, int, string) {
	t.Helper()
	return ansibletest.Run(t, module, kube.With(run, c.Connector()), args)
}

func storedData(t *testing.T, c *kubetest.Cluster, ns, name string) map[string]string {
	t.Helper()
	obj := c.Object(secretGVR, ns, name)
	require.NotNil(t, obj, "Secret %s/%s", ns, name)
	return decoded(currentData(obj))
}

func decoded(data map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}

func TestGitHTTPS(t *testing.T) {
	c := kubetest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})
	for name, tc := range map[string]struct {
		git  map[string]any
		want map[string]string
	}{
		"username and password": {map[string]any{"username": "flux", "password": "gitea-token-9f2c"}, map[string]string{"username": "flux", "password": "gitea-token-9f2c"}},
		"default username":      {map[string]any{"password": "gitea-token-9f2c"}, map[string]string{"username": "git", "password": "gitea-token-9f2c"}},
		"bearer token":          {map[string]any{"bearer_token": "bearer-7e1d"}, map[string]string{"bearerToken": "bearer-7e1d"}},
	} {
		t.Run(name, func(t *testing.T) {
			res, code, out := seedOn(t, c, map[string]any{"secrets": []any{map[string]any{"name": "git-https", "namespace": "flux-system", "git_https": tc.git}}})
			require.Equal(t, 0, code, res["msg"])
			assert.Equal(t, tc.want, storedData(t, c, "flux-system", "git-https"))
			assert.NotContains(t, out, "gitea-token-9f2c")
			assert.NotContains(t, out, "bearer-7e1d")
			assert.Contains(t, out, `"name":"git-https"`, "the username is no secret: it masks nothing")
		})
	}
	res, code, _ := seedOn(t, c, map[string]any{"secrets": []any{map[string]any{"name": "git-https", "namespace": "flux-system", "git_https": map[string]any{"username": "u"}}}})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "password")
}

// TestKnownHostsOfEachForge: known_hosts github, gitlab and codeberg write
// that forge's pinned keys, for its hosts and no other's.
func TestKnownHostsOfEachForge(t *testing.T) {
	c := kubetest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})
	deployKey := newDeployKey(t, "")
	for _, tc := range []struct {
		knownHosts string
		hosts      []string
		refused    string
	}{
		{"github", []string{"github.com", "[ssh.github.com]:443"}, "gitlab.com"},
		{"gitlab", []string{"gitlab.com"}, "github.com"},
		{"codeberg", []string{"codeberg.org"}, "github.com"},
	} {
		t.Run(tc.knownHosts, func(t *testing.T) {
			res, code, _ := seedOn(t, c, map[string]any{"secrets": []any{map[string]any{"name": "git-deploy-key", "namespace": "flux-system",
				"git_deploy_key": map[string]any{"private_key": deployKey, "known_hosts": tc.knownHosts}}}})
			require.Equal(t, 0, code, res["msg"])
			lines := strings.Split(strings.TrimSpace(storedData(t, c, "flux-system", "git-deploy-key")["known_hosts"]), "\n")
			require.Len(t, lines, 3*len(tc.hosts), "ecdsa, ed25519 and rsa for each host")
			for i, l := range lines {
				_, hosts, _, _, _, err := ssh.ParseKnownHosts([]byte(l))
				require.NoError(t, err)
				assert.Equal(t, []string{tc.hosts[i/3]}, hosts)
				assert.NotContains(t, l, tc.refused)
			}
		})
	}
	meta := filepath.Join(t.TempDir(), "meta.json")
	require.NoError(t, os.WriteFile(meta, []byte("{}"), 0o600))
	res, code, _ := seedOn(t, c, map[string]any{"secrets": []any{map[string]any{"name": "git-deploy-key", "namespace": "flux-system",
		"git_deploy_key": map[string]any{"private_key": deployKey, "known_hosts": "gitlab", "github_meta_file": meta}}}})
	assert.Equal(t, 1, code, "GitHub's meta file is not silently ignored")
	assert.Contains(t, res["msg"], "git_deploy_key.github_meta_file confirms GitHub's keys: it goes with known_hosts=github only")
}

func TestSeedAgainstAnInMemoryCluster(t *testing.T) {
	c := kubetest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	deployKey := newDeployKey(t, "")
	clientSecret := "unit-client-secret-3d7f"
	seed := func(secret string) map[string]any {
		return map[string]any{"namespaces": []any{"flux-system", "platform"}, "secrets": []any{
			map[string]any{"name": "git-deploy-key", "namespace": "flux-system", "git_deploy_key": map[string]any{"private_key": deployKey}},
			map[string]any{"name": "sops-age", "namespace": "flux-system", "age_key": map[string]any{"key": id.String()}},
			map[string]any{"name": "infisical-universal-auth", "namespace": "platform", "universal_auth": map[string]any{"client_id": "platform-client-id", "client_secret": secret}},
		}}
	}
	checkMode := func(args map[string]any) map[string]any {
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		return args
	}

	t.Run("check mode plans everything and writes nothing", func(t *testing.T) {
		res, code, out := seedOn(t, c, checkMode(seed(clientSecret)))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, []any{map[string]any{"name": "flux-system", "created": false}, map[string]any{"name": "platform", "created": true}}, res["namespaces"])
		assert.Len(t, res["diff"], 4, "a namespace and three Secrets")
		assert.Equal(t, 0, c.Writes())
		assert.NotContains(t, out, clientSecret)
		assert.NotContains(t, out, id.String())
	})

	t.Run("creates the namespace by name only and the Secrets", func(t *testing.T) {
		res, code, _ := seedOn(t, c, seed(clientSecret))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		ns := c.Object(namespaceGVR, "", "platform")
		require.NotNil(t, ns)
		assert.Empty(t, ns.GetLabels())
		assert.Empty(t, ns.GetAnnotations())
		assert.Equal(t, map[string]string{"clientId": "platform-client-id", "clientSecret": clientSecret}, storedData(t, c, "platform", "infisical-universal-auth"))
		assert.Equal(t, id.String()+"\n", storedData(t, c, "flux-system", "sops-age")["age.agekey"])
		assert.Contains(t, storedData(t, c, "flux-system", "git-deploy-key")["known_hosts"], "github.com ssh-ed25519 ")
	})

	t.Run("a second run changes nothing and writes nothing", func(t *testing.T) {
		writes := c.Writes()
		res, code, _ := seedOn(t, c, seed(clientSecret))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, writes, c.Writes())
	})

	t.Run("a rotated value: check mode says so without a value, a real run writes it", func(t *testing.T) {
		res, code, out := seedOn(t, c, checkMode(seed("rotated-4a1c")))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		diff := res["diff"].(map[string]any)
		assert.Contains(t, diff["after"], "  clientSecret: <redacted, changed>\n")
		assert.Contains(t, diff["after"], "  clientId: <redacted>\n")
		assert.NotContains(t, out, "rotated-4a1c")
		assert.Equal(t, clientSecret, storedData(t, c, "platform", "infisical-universal-auth")["clientSecret"])

		res, code, _ = seedOn(t, c, seed("rotated-4a1c"))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, "rotated-4a1c", storedData(t, c, "platform", "infisical-universal-auth")["clientSecret"])
	})

	t.Run("keys other managers own stay; a key this module stops applying goes", func(t *testing.T) {
		_, err := c.Clients().Dynamic.Resource(secretGVR).Namespace("platform").Patch(t.Context(), "infisical-universal-auth", "application/merge-patch+json",
			[]byte(`{"data":{"extra":"b3RoZXI="}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		args := seed("rotated-4a1c")
		args["secrets"].([]any)[2] = map[string]any{"name": "infisical-universal-auth", "namespace": "platform", "string_data": map[string]any{"clientId": "platform-client-id"}}
		res, code, _ := seedOn(t, c, args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, map[string]string{"clientId": "platform-client-id", "extra": "other"}, storedData(t, c, "platform", "infisical-universal-auth"))
		res, _, _ = seedOn(t, c, args)
		assert.Equal(t, false, res["changed"], "the other manager's key does not make it differ")
	})

	t.Run("a Secret Flux adopted is left alone with a warning, unless forced", func(t *testing.T) {
		_, err := c.Clients().Dynamic.Resource(secretGVR).Namespace("platform").Patch(t.Context(), "infisical-universal-auth", "application/merge-patch+json",
			[]byte(`{"metadata":{"labels":{"kustomize.toolkit.fluxcd.io/name":"platform"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		writes := c.Writes()
		res, code, _ := seedOn(t, c, seed("third-9e2b"))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Contains(t, res["warnings"].([]any)[0], "is adopted by Flux (kustomize.toolkit.fluxcd.io/name=platform): left alone")
		assert.Equal(t, true, res["secrets"].([]any)[2].(map[string]any)["adopted"])
		assert.Equal(t, writes, c.Writes())

		args := seed("third-9e2b")
		args["force"] = true
		res, code, _ = seedOn(t, c, args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, "third-9e2b", storedData(t, c, "platform", "infisical-universal-auth")["clientSecret"])
	})

	t.Run("a type change needs force; with force the old Secret is replaced", func(t *testing.T) {
		typed := func(force, check bool) map[string]any {
			args := map[string]any{"force": force, "secrets": []any{map[string]any{"name": "sops-age", "namespace": "flux-system",
				"type": "example.com/age", "string_data": map[string]any{"age.agekey": id.String()}}}}
			if check {
				checkMode(args)
			}
			return args
		}
		res, code, _ := seedOn(t, c, typed(false, false))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "Secret flux-system/sops-age has type Opaque, not example.com/age: a Secret's type cannot change; delete it or set force=true to replace it")

		writes := c.Writes()
		res, code, _ = seedOn(t, c, typed(true, true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, writes, c.Writes(), "check mode deletes nothing")

		res, code, _ = seedOn(t, c, typed(true, false))
		require.Equal(t, 0, code, res["msg"])
		sec := c.Object(secretGVR, "flux-system", "sops-age")
		assert.Equal(t, "example.com/age", sec.Object["type"])
	})

	t.Run("a refusal for one Secret writes nothing for the others", func(t *testing.T) {
		writes := c.Writes()
		res, code, _ := seedOn(t, c, map[string]any{"namespaces": []any{"not-yet"}, "secrets": []any{
			map[string]any{"name": "first", "namespace": "flux-system", "string_data": map[string]any{"k": "first-value-0c4d"}},
			map[string]any{"name": "sops-age", "namespace": "flux-system", "string_data": map[string]any{"age.agekey": id.String()}},
		}})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "Secret flux-system/sops-age has type example.com/age, not Opaque")
		assert.Equal(t, writes, c.Writes())
		assert.Nil(t, c.Object(secretGVR, "flux-system", "first"))
		assert.Nil(t, c.Object(namespaceGVR, "", "not-yet"))
	})

	t.Run("a replacement the API server refuses after the delete puts the old Secret back", func(t *testing.T) {
		c.Fail = func(verb string, gvr schema.GroupVersionResource, name string) error {
			if verb == "apply" && name == "sops-age" {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, name, nil)
			}
			return nil
		}
		defer func() { c.Fail = nil }()
		res, code, _ := seedOn(t, c, map[string]any{"force": true, "secrets": []any{map[string]any{"name": "sops-age", "namespace": "flux-system",
			"age_key": map[string]any{"key": id.String()}}}})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "the old Secret flux-system/sops-age was put back as it was")
		sec := c.Object(secretGVR, "flux-system", "sops-age")
		require.NotNil(t, sec, "never left deleted")
		assert.Equal(t, "example.com/age", sec.Object["type"])
	})

	t.Run("an API server error is reported, naming what was read", func(t *testing.T) {
		c.Fail = func(verb string, gvr schema.GroupVersionResource, name string) error {
			if verb == "get" && gvr.Resource == "secrets" {
				return errors.New("connection refused")
			}
			return nil
		}
		defer func() { c.Fail = nil }()
		res, code, _ := seedOn(t, c, seed(clientSecret))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "get secrets flux-system/git-deploy-key: connection refused")
	})

	t.Run("state absent deletes, check mode first; an adopted Secret stays", func(t *testing.T) {
		absent := func(check bool) map[string]any {
			// The spec wants a source for every Secret, also to delete it.
			source := map[string]any{"unused": "absent-placeholder"}
			args := map[string]any{"state": "absent", "secrets": []any{
				map[string]any{"name": "sops-age", "namespace": "flux-system", "string_data": source},
				map[string]any{"name": "infisical-universal-auth", "namespace": "platform", "string_data": source},
				map[string]any{"name": "never-was", "namespace": "platform", "string_data": source},
			}}
			if check {
				checkMode(args)
			}
			return args
		}
		writes := c.Writes()
		res, code, _ := seedOn(t, c, absent(true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, writes, c.Writes())

		res, code, _ = seedOn(t, c, absent(false))
		require.Equal(t, 0, code, res["msg"])
		assert.Nil(t, c.Object(secretGVR, "flux-system", "sops-age"))
		assert.NotNil(t, c.Object(secretGVR, "platform", "infisical-universal-auth"), "adopted by Flux")
		results := res["secrets"].([]any)
		assert.Equal(t, true, results[0].(map[string]any)["changed"])
		assert.Equal(t, true, results[1].(map[string]any)["adopted"])
		assert.Equal(t, false, results[2].(map[string]any)["changed"])

		res, _, _ = seedOn(t, c, absent(false))
		assert.Equal(t, false, res["changed"])
	})
}

func TestConfigMapsAreWrittenOnce(t *testing.T) {
	c := kubetest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})
	vars := func(domain string) map[string]any {
		return map[string]any{"config_maps": []any{map[string]any{"name": "cluster-vars", "namespace": "flux-system",
			"data": map[string]any{"cluster_domain": domain, "workers": 3, "ha": true, "ratio": 0.5}}}}
	}
	stored := func() map[string]any {
		obj := c.Object(configMapGVR, "flux-system", "cluster-vars")
		require.NotNil(t, obj)
		data, _, _ := unstructured.NestedMap(obj.Object, "data")
		return data
	}
	checkMode := func(args map[string]any) map[string]any {
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		return args
	}

	res, code, _ := seedOn(t, c, checkMode(vars("home.example.org")))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, 0, c.Writes(), "check mode writes nothing")
	assert.Contains(t, res["diff"].(map[string]any)["after"], "cluster_domain: home.example.org", "no secret: the diff shows the values")

	res, code, _ = seedOn(t, c, vars("home.example.org"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, map[string]any{"cluster_domain": "home.example.org", "workers": "3", "ha": "true", "ratio": "0.5"}, stored(), "as they read in YAML")

	writes := c.Writes()
	res, code, _ = seedOn(t, c, vars("home.example.org"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
	assert.Nil(t, res["warnings"])

	// Edited since (by Flux or by hand): left as it is, and said so.
	res, code, _ = seedOn(t, c, checkMode(vars("lab.example.org")))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
	assert.Equal(t, []any{"cluster_domain"}, res["config_maps"].([]any)[0].(map[string]any)["differs"])
	assert.Contains(t, res["warnings"], "ConfigMap flux-system/cluster-vars (cluster_domain) holds other values than given: a seed ConfigMap is written once and then left to Flux, so it was not changed; edit it in the cluster or in your repository")
	res, code, _ = seedOn(t, c, vars("lab.example.org"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
	assert.Equal(t, writes, c.Writes())
	assert.Equal(t, "home.example.org", stored()["cluster_domain"])

	res, code, _ = seedOn(t, c, map[string]any{"config_maps": []any{map[string]any{"name": "cv", "namespace": "flux-system", "data": map[string]any{"hosts": []any{"a"}}}}})
	assert.Equal(t, 1, code)
	assert.Equal(t, "config_maps[0] (flux-system/cv): data.hosts is a []interface {}; expected a string, a number or a boolean", res["msg"])

	res, code, _ = seedOn(t, c, map[string]any{"state": "absent", "config_maps": []any{map[string]any{"name": "cluster-vars", "namespace": "flux-system", "data": map[string]any{}}}})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Nil(t, c.Object(configMapGVR, "flux-system", "cluster-vars"))
}

func TestGitHTTPSCAFile(t *testing.T) {
	c := kubetest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, []byte(testCA), 0o600))
	res, code, _ := seedOn(t, c, map[string]any{"secrets": []any{map[string]any{"name": "git-https", "namespace": "flux-system",
		"git_https": map[string]any{"password": "gitea-token-9f2c", "ca_file": ca}}}})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, testCA, storedData(t, c, "flux-system", "git-https")["ca.crt"])

	key := filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(key, []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIDontLeakMeAAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600))
	res, code, out := seedOn(t, c, map[string]any{"secrets": []any{map[string]any{"name": "git-https", "namespace": "flux-system",
		"git_https": map[string]any{"password": "gitea-token-9f2c", "ca_file": key}}}})
	assert.Equal(t, 1, code)
	assert.Equal(t, "secrets[0] (flux-system/git-https): git_https.ca_file: "+key+" holds a PEM ec private key block: want only CERTIFICATE blocks", res["msg"])
	assert.NotContains(t, out, "DontLeakMe")
}

// testCA is a self-signed CA certificate (ECDSA P-256), for ca_file.
const testCA = `-----BEGIN CERTIFICATE-----
MIIBXDCCAQGgAwIBAgIBATAKBggqhkjOPQQDAjAVMRMwEQYDVQQDEwpob21lbGFi
IENBMB4XDTI2MDEwMTAwMDAwMFoXDTM2MDEwMTAwMDAwMFowFTETMBEGA1UEAxMK
aG9tZWxhYiBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABHFFrb0jgwgPKVXm
OY3iyyaHzvelf3fwvXz5AWr4qEiWszv0MILYM6jqBk92FfYmhzh0iT6cPabaElv6
KdLkMI+jQjBAMA4GA1UdDwEB/wQEAwICBDAPBgNVHRMBAf8EBTADAQH/MB0GA1Ud
DgQWBBT7yBCu3/nfRY+N9UpTsjznCfb3sTAKBggqhkjOPQQDAgNJADBGAiEAzb76
42RNFGZH87yv5MJQpViFuoKlNuffSnItLlsL0FQCIQDpwe8gMB3d5zdpAqfR6e9y
t9/eKRDIuX8X9p/LcMC8og==
-----END CERTIFICATE-----
`
