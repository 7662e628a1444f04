package repocheck

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secrets are credentials of the real shapes, made fresh for the test.
type secrets struct {
	pem, age, k3sToken, password string
}

func newSecrets(t *testing.T) secrets {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	random := func(n int) string {
		b := make([]byte, n)
		_, err := rand.Read(b)
		require.NoError(t, err)
		return hex.EncodeToString(b)
	}
	return secrets{
		pem:      string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		age:      id.String(),
		k3sToken: "K10" + random(32) + "::server:" + random(16),
		password: random(12),
	}
}

func TestCredentialsIn(t *testing.T) {
	s := newSecrets(t)
	for name, tc := range map[string]struct {
		content string
		want    []credential
	}{
		"PEM private key": {"# deploy key\n" + s.pem, []credential{{2, "a PEM private key"}}},
		"OpenSSH private key": {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
			[]credential{{1, "a PEM private key"}}},
		"age identity file": {"# created: 2026-12-04\n# public key: age1xyz\n" + s.age + "\n", []credential{{3, "an age secret key"}}},
		"k3s node-token":    {s.k3sToken + "\n", []credential{{1, "a k3s token"}}},
		"k3s token in an Ansible variable": {"k8s_cluster_token: " + s.k3sToken + "\n",
			[]credential{{1, "a k3s token"}, {1, "k8s_cluster_token in plain text"}}},
		"kubeconfig with a client key": {"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:6443}\nusers:\n- name: admin\n  user:\n    client-certificate-data: Zm9v\n    client-key-data: " + base64.StdEncoding.EncodeToString([]byte(s.pem)) + "\n",
			[]credential{{10, "a kubeconfig with credentials (users[0].user.client-key-data)"}}},
		"kubeconfig with a token, flow style": {`{"apiVersion":"v1","clusters":[],"users":[{"name":"a","user":{"token":"` + s.password + `"}}]}`,
			[]credential{{1, "a kubeconfig with credentials (users[0].user.token)"}}},
		"kubeconfig with an auth-provider's token": {"kind: Config\nusers:\n- name: oidc\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        id-token: " + s.password + "\n",
			[]credential{{8, "a kubeconfig with credentials (users[0].user.auth-provider.config.id-token)"}}},
		"kubeconfig with key files only": {"kind: Config\nusers:\n- name: admin\n  user:\n    client-certificate: /etc/admin.crt\n    client-key: /etc/admin.key\n", nil},
		"Secret in the clear": {"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: apps\nstringData:\n  password: " + s.password + "\n",
			[]credential{{7, "an unencrypted Kubernetes Secret apps/db (stringData)"}}},
		"Secret with base64 data, second document": {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: " + base64.StdEncoding.EncodeToString([]byte(s.password)) + "\n",
			[]credential{{11, "an unencrypted Kubernetes Secret db (data)"}}},
		"Secret of Flux substitutions": {"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ${DB_PASSWORD}\n  user: ${DB_USER:=app}\n", nil},
		"Secret without data":          {"apiVersion: v1\nkind: Secret\nmetadata:\n  name: filled-later\ntype: Opaque\n", nil},
		"SOPS-encrypted Secret":        {"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ENC[AES256_GCM,data:cGFzcw==,iv:aXY=,tag:dGFn,type:str]\nsops:\n  age:\n    - recipient: age1xyz\n  mac: ENC[AES256_GCM,data:bWFj,iv:aXY=,tag:dGFn,type:str]\n  version: 3.9.0\n", nil},
		"SOPS-encrypted JSON":          {`{"token": "ENC[AES256_GCM,data:dA==,iv:aQ==,tag:dA==,type:str]",` + "\n" + `"sops": {"mac": "ENC[AES256_GCM,data:bQ==,iv:aQ==,tag:dA==,type:str]"}}`, nil},
		"Ansible Vault file":           {"$ANSIBLE_VAULT;1.1;AES256\n3338346435\n", nil},
		"role variables in group_vars": {"k8s_cluster_k3s_version: v1.31.4+k3s1\nflux_bootstrap_git_password: " + s.password + "\nflux_bootstrap_infisical_auth:\n  apps:\n    client_id: apps-id\n    client_secret: " + s.password + "\n",
			[]credential{{2, "flux_bootstrap_git_password in plain text"}, {6, "flux_bootstrap_infisical_auth.apps.client_secret in plain text"}}},
		"role variables from lookups and the vault": {"k8s_cluster_token: \"{{ lookup('env', 'K3S_TOKEN') }}\"\nflux_bootstrap_git_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nflux_bootstrap_infisical_auth:\n  apps:\n    client_id: apps-id\n    client_secret: \"{{ vault_apps_secret }}\"\n", nil},
		"registries: a password, not the username nor a key file": {"k8s_cluster_registries:\n  configs:\n    registry.lan:\n      auth:\n        username: pull\n        password: " + s.password + "\n      tls:\n        key_file: /etc/registry.key\n",
			[]credential{{6, "k8s_cluster_registries.configs.registry.lan.auth.password in plain text"}}},
		"extra Secrets' data": {"flux_bootstrap_extra_secrets:\n  - name: s3\n    namespace: backup\n    string_data:\n      AWS_ACCESS_KEY_ID: " + s.password + "\n",
			[]credential{{5, "flux_bootstrap_extra_secrets[0].string_data.AWS_ACCESS_KEY_ID in plain text"}}},
		"public keys and ordinary manifests": {"# .sops.yaml\ncreation_rules:\n  - age: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: token-settings\ndata:\n  token: not-a-secret\n", nil},
		"not YAML":                           {"<html>{{ not: [yaml</html>\n", nil},

		// Issue 42: what the scan missed.
		"kubectl get secrets -o yaml: a List of Secrets": {"apiVersion: v1\nitems:\n- apiVersion: v1\n  data:\n    password: " + b64(s.password) + "\n  kind: Secret\n  metadata:\n    name: db\n    namespace: apps\n  type: Opaque\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
			[]credential{{5, "an unencrypted Kubernetes Secret apps/db (data)"}}},
		"a Secret after a document that does not parse": {"broken: [unclosed\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: " + s.password + "\n",
			[]credential{{8, "an unencrypted Kubernetes Secret db (stringData)"}}},
		"data given as a YAML alias": {"x-creds: &creds\n  password: " + b64(s.password) + "\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata: *creds\n",
			[]credential{{2, "an unencrypted Kubernetes Secret db (data)"}}},
		"kustomize secretGenerator literals": {"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nsecretGenerator:\n  - name: db\n    literals:\n      - password=" + s.password + "\n",
			[]credential{{6, "a secretGenerator db's literals in plain text"}}},
		"k8s_cluster_token= in an INI inventory": {"[k3s_controllers]\nnode1 ansible_host=10.0.0.1 flux_bootstrap_git_password='" + s.password + "'\n\n[k3s_cluster:vars]\nk8s_cluster_token=" + s.password + "\n# k8s_cluster_token=" + s.password + "\n",
			[]credential{{2, "flux_bootstrap_git_password in plain text"}, {5, "k8s_cluster_token in plain text"}}},
		"an age key in lower case": {strings.ToLower(s.age) + "\n", []credential{{1, "an age secret key"}}},
		"a kubeconfig with users but no clusters": {"apiVersion: v1\nusers:\n- name: admin\n  user:\n    token: " + s.password + "\n",
			[]credential{{5, "a kubeconfig with credentials (users[0].user.token)"}}},
		"a fake sops key and one ENC[ beside a PEM key": {"sops:\n  version: 3.9.0\nnote: ENC[AES256_GCM,data:dA==,iv:aQ==,tag:dA==,type:str]\n" + s.pem,
			[]credential{{4, "a PEM private key"}}},
		"SOPS with encrypted_regex, a password outside it": {"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: grafana\nspec:\n  values:\n    adminUser: admin\n    adminPassword: " + s.password + "\n    existingSecret: grafana-admin\ndata:\n  note: ENC[AES256_GCM,data:dA==,iv:aQ==,tag:dA==,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:bQ==,iv:aQ==,tag:dA==,type:str]\n  lastmodified: \"2026-12-04T10:00:00Z\"\n  encrypted_regex: ^(data|stringData)$\n  version: 3.9.0\n",
			[]credential{{8, "spec.values.adminPassword in plain text in a SOPS-encrypted file"}}},
		"an age post-quantum key":                           {pqAge(t) + "\n", []credential{{1, "an age secret key"}}},
		"a PEM key in a JSON string":                        {`{"key": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIGz0\n-----END PRIVATE KEY-----\n"}`, []credential{{1, "a PEM private key"}}},
		"INI inventory: templates and shell variables pass": {"[all:vars]\nk8s_cluster_token=\"{{ lookup('env', 'K3S_TOKEN') }}\"\nflux_bootstrap_git_password=$GIT_PASSWORD\n", nil},
		// Issue 42: what the scan flagged and must pass.
		"Secret data of Flux substitutions": {"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: ${DB_PASSWORD_B64}\n", nil},
		"a README's example key header":     {"# Deploy key\n\nThe file starts with `-----BEGIN OPENSSH PRIVATE KEY-----`; paste it as is:\n\n    -----BEGIN OPENSSH PRIVATE KEY-----\n    ...\n    -----END OPENSSH PRIVATE KEY-----\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, credentialsIn([]byte(tc.content)))
		})
	}
}

// gitRepo makes a git work tree holding files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	git(t, root, "init", "-q")
	write(t, root, files)
	return root
}

func git(t *testing.T, root string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o600))
	}
}

func TestScanCredentials(t *testing.T) {
	s := newSecrets(t)
	root := gitRepo(t, map[string]string{
		"ansible/.gitignore":         ".generated/\n",
		"ansible/deploy_key":         s.pem,
		"flux/cluster.yaml":          instance,
		"apps/secret.yaml":           "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: " + s.password + "\n",
		"ansible/.generated/kc":      "kind: Config\nusers:\n- name: a\n  user:\n    token: " + s.password + "\n",
		"docs/logo.png":              "\x89PNG\x00" + s.age,
		"ansible/group_vars/k3s.yml": "k8s_cluster_token: " + s.k3sToken + "\n",
	})
	git(t, root, "add", "apps/secret.yaml", "flux/cluster.yaml")
	git(t, root, "commit", "-q", "-m", "first")
	require.NoError(t, os.Symlink("/etc/ssh/ssh_host_ed25519_key", filepath.Join(root, "host_key")))

	problems, err := scanCredentials(root)
	require.NoError(t, err)
	byPath := map[string]Problem{}
	for _, p := range problems {
		byPath[p.Path] = p
		for _, secret := range []string{s.pem, s.age, s.k3sToken, s.password, strings.Split(s.k3sToken, "::")[1]} {
			assert.NotContains(t, p.Message+p.Fix, secret, "a finding names the credential, never its value")
		}
		assert.Equal(t, "credential", p.Kind)
	}
	assert.ElementsMatch(t, []string{"apps/secret.yaml", "ansible/deploy_key", "ansible/group_vars/k3s.yml"}, keys(byPath),
		"ignored files (.generated/), binaries and links are not read")
	assert.Equal(t, "apps/secret.yaml is tracked by git and holds an unencrypted Kubernetes Secret db (stringData) (line 6): a push publishes it to everyone who can read the repository", byPath["apps/secret.yaml"].Message)
	assert.Equal(t, "take it out of git (`git rm --cached apps/secret.yaml`, then list it in .gitignore) or encrypt it with SOPS; a credential that was ever pushed must be rotated", byPath["apps/secret.yaml"].Fix)
	assert.Equal(t, "ansible/deploy_key is not ignored by git and holds a PEM private key (line 1): `git add -A` would add it, and a push publish it", byPath["ansible/deploy_key"].Message)
	assert.Equal(t, "ansible/group_vars/k3s.yml is not ignored by git and holds a k3s token (line 1), k8s_cluster_token in plain text (line 1): `git add -A` would add it, and a push publish it", byPath["ansible/group_vars/k3s.yml"].Message)

	// Ignored, then encrypted: nothing left.
	write(t, root, map[string]string{".gitignore": "/ansible/deploy_key\n/ansible/group_vars/\n",
		"apps/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ENC[AES256_GCM,data:cA==,iv:aQ==,tag:dA==,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:bQ==,iv:aQ==,tag:dA==,type:str]\n"})
	problems, err = scanCredentials(root)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestScanCredentialsOutsideGit(t *testing.T) {
	s := newSecrets(t)
	root := t.TempDir()
	write(t, root, map[string]string{".gitignore": "keys.txt\n", "keys.txt": s.age + "\n", ".git/config": s.age + "\n"})
	problems, err := scanCredentials(root)
	require.NoError(t, err)
	require.Len(t, problems, 1, "a .git directory is not a work tree's files")
	assert.Equal(t, "keys.txt holds an age secret key (line 1), and the repository directory is not a git work tree that could ignore it: pushed, it would be published", problems[0].Message)
}

func pqAge(t *testing.T) string {
	t.Helper()
	id, err := age.GenerateHybridIdentity()
	require.NoError(t, err)
	return id.String()
}

// Aliases of aliases (the billion laughs) are walked once per anchor.
func TestCredentialsInAliasesOfAliases(t *testing.T) {
	doc := "a: &a {password: hunter2hunter2}\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		doc += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = name
	}
	doc += "flux_bootstrap_extra_secrets: *j\n"
	assert.Len(t, credentialsIn([]byte(doc)), 1)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func keys(m map[string]Problem) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A secretGenerator makes a Secret of the files it reads: an env file (or
// a file) it names holds the Secret's values, whatever its own shape.
func TestScanCredentialsSecretGeneratorFiles(t *testing.T) {
	s := newSecrets(t)
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nsecretGenerator:\n  - name: db\n    envs:\n      - db.env\n  - name: tls\n    files:\n      - tls.key=certs/server.key\n"
	for name, tc := range map[string]struct {
		files map[string]string
		want  map[string]string
	}{
		"env and files in plain text": {map[string]string{"apps/kustomization.yaml": kustomization,
			"apps/db.env": "# the database\nUSER=app\nPASSWORD=" + s.password + "\n", "apps/certs/server.key": s.password + "\n"},
			map[string]string{
				"apps/db.env":           "apps/db.env is not ignored by git and holds values a secretGenerator makes a Secret of (apps/kustomization.yaml line 6) (line 2): `git add -A` would add it, and a push publish it",
				"apps/certs/server.key": "apps/certs/server.key is not ignored by git and holds values a secretGenerator makes a Secret of (apps/kustomization.yaml line 9) (line 1): `git add -A` would add it, and a push publish it",
			}},
		"env of substitutions, SOPS-encrypted files, ignored files": {map[string]string{"apps/kustomization.yaml": kustomization, ".gitignore": "*.key\n",
			"apps/db.env": "USER=${DB_USER}\nPASSWORD=ENC[AES256_GCM,data:dA==,iv:aQ==,tag:dA==,type:str]\nsops_mac=ENC[AES256_GCM,data:bQ==,iv:aQ==,tag:dA==,type:str]\nsops_lastmodified=2026-12-04T10:00:00Z\n", "apps/certs/server.key": s.password + "\n"},
			map[string]string{}},
	} {
		t.Run(name, func(t *testing.T) {
			problems, err := scanCredentials(gitRepo(t, tc.files))
			require.NoError(t, err)
			got := map[string]string{}
			for _, p := range problems {
				got[p.Path] = p.Message
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
