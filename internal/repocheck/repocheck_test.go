package repocheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const instance = `apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: "2.x"
  sync:
    kind: GitRepository
    url: ssh://git@github.com/me/homelab.git
    ref: refs/heads/main
    path: clusters/home
    pullSecret: git-deploy-key
`

// seedRepo is seed 000's shape: a Flux Kustomization whose kustomization
// mounts an icon through a configMapGenerator.
func seedRepo(t *testing.T, extra map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"flux/cluster.yaml": instance,
		"clusters/home/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  decryption:
    provider: sops
    secretRef:
      name: sops-age
`,
		"apps/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
configMapGenerator:
  - name: glance-branding
    files:
      - branding/icon.png
`,
		"apps/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: glance
  namespace: default
spec:
  selector: {matchLabels: {app: glance}}
  template:
    metadata: {labels: {app: glance}}
    spec:
      containers: [{name: glance, image: glanceapp/glance:v0.8.4}]
`,
		"apps/branding/icon.png": "\x89PNG\r\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

func check(t *testing.T, root string, secrets ...string) *Report {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "flux/cluster.yaml"))
	require.NoError(t, err)
	r, err := Check(Options{Root: root, Instance: raw, InstanceFile: "flux/cluster.yaml", Secrets: secrets, KnownHosts: []string{"github.com"}})
	require.NoError(t, err)
	return r
}

func TestSeedIconExcludedIsReportedWithTheFix(t *testing.T) {
	r := check(t, seedRepo(t, nil), "flux-system/git-deploy-key", "flux-system/sops-age")
	require.Len(t, r.Problems, 1, "%+v", r.Problems)
	p := r.Problems[0]
	assert.Equal(t, "excluded", p.Kind)
	assert.Equal(t, "flux-system/apps", p.Kustomization)
	assert.Equal(t, "apps/branding/icon.png", p.Path)
	assert.Equal(t, `"*.png" (source-controller's built-in default exclusions)`, p.Rule)
	assert.Contains(t, p.Fix, "`!/apps/branding/icon.png` to .sourceignore at the repository root")
	assert.Contains(t, p.Fix, "drops all its default exclusions")
	assert.Equal(t, []Checked{{Name: "flux-system/flux-system", Path: "clusters/home", Resources: 1}}, r.Kustomizations)
	assert.Contains(t, r.Excluded, "apps/branding/icon.png")
}

func TestSeedIconReincludedIsClean(t *testing.T) {
	r := check(t, seedRepo(t, map[string]string{".sourceignore": "# the Glance icon\n!/apps/branding/icon.png\n"}), "flux-system/git-deploy-key", "flux-system/sops-age")
	assert.Empty(t, r.Problems)
	assert.Equal(t, []Checked{
		{Name: "flux-system/flux-system", Path: "clusters/home", Resources: 1},
		{Name: "flux-system/apps", Path: "apps", Resources: 2},
	}, r.Kustomizations)
}

func TestUserRuleFixGoesBelowIt(t *testing.T) {
	r := check(t, seedRepo(t, map[string]string{"apps/.sourceignore": "*.md\nbranding/\n"}), "flux-system/git-deploy-key", "flux-system/sops-age")
	require.Len(t, r.Problems, 1, "%+v", r.Problems)
	assert.Equal(t, `"branding/" (apps/.sourceignore line 2)`, r.Problems[0].Rule)
	assert.Equal(t, "add the line `!/branding/icon.png` to apps/.sourceignore, after line 2", r.Problems[0].Fix)
}

func TestSecretsAndKnownHosts(t *testing.T) {
	root := seedRepo(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n"})
	r := check(t, root)
	kinds := map[string]string{}
	for _, p := range r.Problems {
		kinds[p.Kind+" "+p.Kustomization] = p.Message
	}
	assert.Equal(t, map[string]string{
		"secret ":                 "spec.sync.pullSecret flux-system/git-deploy-key will not exist: the bootstrap seeds none",
		"secret flux-system/apps": "spec.decryption.secretRef flux-system/sops-age will not exist: the bootstrap seeds none",
	}, kinds)

	raw, err := os.ReadFile(filepath.Join(root, "flux/cluster.yaml"))
	require.NoError(t, err)
	r, err = Check(Options{Root: root, Instance: raw, InstanceFile: "flux/cluster.yaml", Secrets: []string{"flux-system/git-deploy-key", "flux-system/sops-age"}, KnownHosts: []string{"git.lan"}})
	require.NoError(t, err)
	require.Len(t, r.Problems, 1)
	assert.Equal(t, "known_hosts", r.Problems[0].Kind)
	assert.Contains(t, r.Problems[0].Message, "github.com is not in the deploy key's known_hosts (git.lan)")
}

func TestBuildErrorAndMissingPath(t *testing.T) {
	r := check(t, seedRepo(t, map[string]string{"apps/kustomization.yaml": "resources:\n  - missing.yaml\n"}), "flux-system/git-deploy-key", "flux-system/sops-age")
	require.Len(t, r.Problems, 1)
	assert.Equal(t, "build", r.Problems[0].Kind)
	assert.Contains(t, r.Problems[0].Message, "kustomize build failed: ")
	assert.Contains(t, r.Problems[0].Message, "missing.yaml")
	assert.NotContains(t, r.Problems[0].Message, os.TempDir()+"/flux-repo-check-", "paths are the repository's")

	r = check(t, seedRepo(t, map[string]string{"flux/cluster.yaml": instanceWithPath("nowhere")}), "flux-system/git-deploy-key")
	require.Len(t, r.Problems, 1)
	assert.Equal(t, `spec.path "nowhere" is not a directory of the artifact`, r.Problems[0].Message)
}

func instanceWithPath(p string) string {
	return instance[:len(instance)-len("clusters/home\n    pullSecret: git-deploy-key\n")] + p + "\n    pullSecret: git-deploy-key\n"
}

func TestBadInstance(t *testing.T) {
	for name, tc := range map[string]struct{ raw, want string }{
		"not yaml":   {":\n  - ][", "flux/cluster.yaml: not YAML"},
		"wrong kind": {"kind: Kustomization\n", `flux/cluster.yaml: kind is "Kustomization", expected FluxInstance`},
		"no sync":    {"kind: FluxInstance\nspec: {}\n", "flux/cluster.yaml: spec.sync is not set"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Check(Options{Root: t.TempDir(), Instance: []byte(tc.raw), InstanceFile: "flux/cluster.yaml"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestHosts(t *testing.T) {
	assert.Equal(t, []string{"github.com", "140.82.112.3", "[git.lan]:2222"}, HostsOf("# c\ngithub.com,140.82.112.3 ssh-ed25519 AAAA\n@cert-authority [git.lan]:2222 ssh-rsa AAAA\n"))
	for raw, want := range map[string]string{
		"ssh://git@github.com/me/r.git": "github.com", "ssh://git@git.lan:2222/me/r.git": "[git.lan]:2222",
		"ssh://git@git.lan:22/r.git": "git.lan", "git@github.com:me/r.git": "github.com",
	} {
		host, ok := sshHost(raw)
		assert.True(t, ok, raw)
		assert.Equal(t, want, host, raw)
	}
	_, ok := sshHost("https://gitea.lan/me/r.git")
	assert.False(t, ok)
}

func TestCacheKeepsOnlyCleanReports(t *testing.T) {
	cache := t.TempDir()
	root := seedRepo(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n"})
	raw, err := os.ReadFile(filepath.Join(root, "flux/cluster.yaml"))
	require.NoError(t, err)
	o := Options{Root: root, Instance: raw, InstanceFile: "flux/cluster.yaml", Secrets: []string{"flux-system/git-deploy-key", "flux-system/sops-age"}, CacheDir: cache}
	first, err := Check(o)
	require.NoError(t, err)
	assert.False(t, first.Cached)
	second, err := Check(o)
	require.NoError(t, err)
	assert.True(t, second.Cached)
	assert.Equal(t, first.Kustomizations, second.Kustomizations)
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	info, err := entries[0].Info()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	o.Secrets = nil // another input: checked again, and its problems are never kept
	for range 2 {
		r, err := Check(o)
		require.NoError(t, err)
		assert.False(t, r.Cached)
		assert.NotEmpty(t, r.Problems)
	}
}

func TestSubstituteFrom(t *testing.T) {
	withVars := func(extra map[string]string) map[string]string {
		files := map[string]string{
			".sourceignore": "!/apps/branding/icon.png\n",
			"clusters/home/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-vars
      - kind: Secret
        name: cluster-secret-vars
        optional: true
`}
		for k, v := range extra {
			files[k] = v
		}
		return files
	}
	secrets := []string{"flux-system/git-deploy-key"}
	root := seedRepo(t, withVars(nil))
	r := check(t, root, secrets...)
	require.Len(t, r.Problems, 1, "%+v", r.Problems)
	assert.Equal(t, "substitute", r.Problems[0].Kind)
	assert.Equal(t, "flux-system/apps: spec.postBuild.substituteFrom ConfigMap flux-system/cluster-vars will not exist: the bootstrap provides none and no build of the repository creates it, so kustomize-controller would fail the Kustomization", r.Problems[0].Message)
	assert.Contains(t, r.Problems[0].Fix, "optional: true")

	raw, err := os.ReadFile(filepath.Join(root, "flux/cluster.yaml"))
	require.NoError(t, err)
	r, err = Check(Options{Root: root, Instance: raw, InstanceFile: "flux/cluster.yaml", Secrets: secrets, ConfigMaps: []string{"flux-system/cluster-vars"}})
	require.NoError(t, err)
	assert.Empty(t, r.Problems, "seeded by the bootstrap")

	// Seed 001's way: the repository itself creates cluster-vars.
	root = seedRepo(t, withVars(map[string]string{
		"clusters/home/kustomization.yaml": "resources:\n  - apps.yaml\n  - cluster-vars.yaml\n",
		"clusters/home/cluster-vars.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\ndata:\n  domain: home.example.org\n",
	}))
	assert.Empty(t, check(t, root, secrets...).Problems, "created by a build")
}

// Seed 000 keeps the FluxInstance at flux/cluster.yaml and syncs path flux
// with no kustomization.yaml there: kustomize-controller takes every
// manifest under the path, the FluxInstance with them. Flux managing
// itself is legitimate (warned, with the consequence and the fixes); a
// FluxInstance in git that differs from the one the play applies fails.
func TestInstanceInsideItsSyncPath(t *testing.T) {
	inFlux := strings.Replace(instance, "path: clusters/home", "path: flux", 1)
	annotated := strings.Replace(inFlux, "  namespace: flux-system\n", "  namespace: flux-system\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)
	// The same FluxInstance, written otherwise: flow style, keys reordered, quotes.
	rewritten := `{"kind": "FluxInstance", "apiVersion": "fluxcd.controlplane.io/v1", "metadata": {"namespace": "flux-system", "name": "flux"},
 "spec": {"sync": {"pullSecret": "git-deploy-key", "path": "flux", "ref": "refs/heads/main", "url": "ssh://git@github.com/me/homelab.git", "kind": "GitRepository"},
 "distribution": {"version": "2.x"}}}`
	const warning = "Kustomization flux-system/flux-system (path flux) applies the FluxInstance flux-system/flux (flux/cluster.yaml): Flux reconciles its own FluxInstance, so a change to the file reaches the cluster through git (as flux-operator documents upgrades), and with prune, removing or renaming the file deletes the FluxInstance, and Flux with it"
	const fix = "annotate it `kustomize.toolkit.fluxcd.io/prune: disabled` (metadata.annotations in flux/cluster.yaml), or list flux/'s resources in an explicit flux/kustomization.yaml that leaves cluster.yaml out"
	for name, tc := range map[string]struct {
		inGit, played string // played: the file the play applies, when not the repository's
		hostNetwork   bool
		extra         map[string]string
		warnings      []Problem
		problem       string // the failure's message, in part
	}{
		"seed 000: Flux reconciles the play's own file, warned": {inGit: inFlux,
			warnings: []Problem{{Kind: "instance", Kustomization: "flux-system/flux-system", Path: "flux/cluster.yaml", Message: warning, Fix: fix}}},
		"the play's file written otherwise: compared as YAML, not bytes": {inGit: inFlux, played: rewritten,
			warnings: []Problem{{Kind: "instance", Kustomization: "flux-system/flux-system", Path: "flux/cluster.yaml", Message: warning, Fix: fix}}},
		"annotated prune: disabled": {inGit: annotated},
		"an explicit kustomization.yaml that leaves it out": {inGit: inFlux,
			extra: map[string]string{"flux/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - apps.yaml\n"}},
		"the play applies another version: the two would fight": {inGit: annotated, played: strings.Replace(annotated, `version: "2.x"`, `version: "2.9.5"`, 1),
			problem: "the FluxInstance flux-system/flux that Kustomization flux-system/flux-system (path flux) applies from git differs from the one the play applies (PLAYED) in spec.distribution: the play and Flux would each apply their own"},
		"the play adds host-network patches that git's lacks": {inGit: annotated, hostNetwork: true,
			problem: "differs from the one the play applies (flux/cluster.yaml) in spec.kustomize: the play and Flux would each apply their own"},
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"flux/cluster.yaml": tc.inGit, ".sourceignore": "!/apps/branding/icon.png\n"}
			for k, v := range tc.extra {
				files[k] = v
			}
			root := seedRepo(t, files)
			// The apps Kustomization moves beside the FluxInstance, into the sync path.
			require.NoError(t, os.Rename(filepath.Join(root, "clusters", "home", "apps.yaml"), filepath.Join(root, "flux", "apps.yaml")))
			o := Options{Root: root, Instance: []byte(tc.inGit), InstanceFile: "flux/cluster.yaml", HostNetwork: tc.hostNetwork,
				Secrets: []string{"flux-system/git-deploy-key", "flux-system/sops-age"}}
			if tc.played != "" {
				o.InstanceFile = filepath.Join(t.TempDir(), "played.yaml")
				o.Instance = []byte(tc.played)
			}
			r, err := Check(o)
			require.NoError(t, err)
			assert.Equal(t, tc.warnings, r.Warnings)
			if tc.problem == "" {
				assert.Empty(t, r.Problems)
				return
			}
			require.Len(t, r.Problems, 1, "%+v", r.Problems)
			assert.Equal(t, "instance", r.Problems[0].Kind)
			assert.Contains(t, r.Problems[0].Message, strings.ReplaceAll(tc.problem, "PLAYED", o.InstanceFile))
			assert.Contains(t, r.Problems[0].Fix, "make the two the same")
		})
	}
}
