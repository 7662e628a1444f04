package fluxrepocheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

var seeded = []any{"flux-system/git-deploy-key", "flux-system/sops-age"}

// seedCopy copies testdata/seed (seed 000's trap: a .png in a
// configMapGenerator) and adds files.
func seedCopy(t *testing.T, extra map[string]string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS("testdata/seed")))
	for name, content := range extra {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	return root
}

func TestModuleFile(t *testing.T) { ansibletest.CheckModuleFile(t, module) }

func TestBadInput(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"path": t.TempDir()}))
	for name, tc := range map[string]struct {
		args map[string]any
		want string
	}{
		"path missing": {map[string]any{"path": "/nonexistent"}, "path /nonexistent: not a directory"},
		"no instance":  {map[string]any{"path": t.TempDir()}, "instance: open "},
		"bad secret":   {map[string]any{"path": seedCopy(t, nil), "secrets": []any{"sops-age"}}, `secrets: "sops-age" is not namespace/name`},
		"bad instance": {map[string]any{"path": seedCopy(t, map[string]string{"flux/cluster.yaml": "kind: Secret\n"})}, `kind is "Secret", expected FluxInstance`},
	} {
		t.Run(name, func(t *testing.T) {
			res, code, _ := ansibletest.Run(t, module, run, tc.args)
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.want)
		})
	}
}

func TestSeedTrapFails(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := seedCopy(t, nil)
	res, code, _ := ansibletest.Run(t, module, run, map[string]any{"path": root, "secrets": seeded, "known_hosts": "github"})
	require.Equal(t, 1, code, res)
	assert.Equal(t, "Flux would fail on "+root+": flux-system/apps needs apps/branding/icon.png, which source-controller leaves out of the artifact "+
		`("*.png" (source-controller's built-in default exclusions)); fix: add the line `+"`!/apps/branding/icon.png`"+` to .sourceignore at the repository root. `+
		"Note: once .sourceignore has any line, source-controller drops all its default exclusions (images, archives, CI files), keeping only .git*", res["msg"])
	assert.Equal(t, false, res["changed"])
	problems := res["problems"].([]any)
	require.Len(t, problems, 1)
	assert.Equal(t, "excluded", problems[0].(map[string]any)["kind"])
}

func TestSeedReincludedPasses(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := seedCopy(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n"})
	for i, check := range []bool{false, true} {
		res, code, _ := ansibletest.Run(t, module, run, map[string]any{"path": root, "secrets": seeded, "known_hosts": "github", "_ansible_check_mode": check})
		require.Equal(t, 0, code, res)
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, []any{}, res["problems"])
		assert.Len(t, res["kustomizations"], 2)
		assert.Equal(t, i == 1, res["cached"], "the second run finds the first's report")
	}
	// A kept file changes: built again, and the trap found.
	require.NoError(t, os.WriteFile(filepath.Join(root, ".sourceignore"), []byte("# nothing kept back\n"), 0o644))
	res, code, _ := ansibletest.Run(t, module, run, map[string]any{"path": root, "secrets": seeded, "known_hosts": "github"})
	assert.Equal(t, 1, code)
	assert.Equal(t, false, res["cached"])
}

func TestKnownHostsAndSecrets(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := seedCopy(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n"})
	res, code, _ := ansibletest.Run(t, module, run, map[string]any{"path": root, "known_hosts": "git.lan ssh-ed25519 AAAA\n"})
	require.Equal(t, 1, code)
	msg := res["msg"].(string)
	assert.Contains(t, msg, "spec.sync.pullSecret flux-system/git-deploy-key will not exist")
	assert.Contains(t, msg, "spec.decryption.secretRef flux-system/sops-age will not exist")
	assert.Contains(t, msg, "github.com is not in the deploy key's known_hosts (git.lan)")
}

// TestKnownHostsOfEachForge: known_hosts gitlab and codeberg cover their
// forge's host only: a sync URL on it passes, one on GitHub is refused, as
// known_hosts github refuses a GitLab URL.
func TestKnownHostsOfEachForge(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	raw, err := os.ReadFile("testdata/seed/flux/cluster.yaml")
	require.NoError(t, err)
	for _, tc := range []struct {
		knownHosts, url, refused string
	}{
		{"github", "ssh://git@github.com/me/homelab.git", ""},
		{"github", "ssh://git@gitlab.com/me/homelab.git", "spec.sync.url's host gitlab.com is not in the deploy key's known_hosts (github.com, [ssh.github.com]:443)"},
		{"gitlab", "ssh://git@gitlab.com/me/homelab.git", ""},
		{"gitlab", "ssh://git@github.com/me/homelab.git", "spec.sync.url's host github.com is not in the deploy key's known_hosts (gitlab.com)"},
		{"codeberg", "git@codeberg.org:me/homelab.git", ""},
		{"codeberg", "ssh://git@gitlab.com/me/homelab.git", "spec.sync.url's host gitlab.com is not in the deploy key's known_hosts (codeberg.org)"},
	} {
		t.Run(tc.knownHosts+" "+tc.url, func(t *testing.T) {
			instance := strings.Replace(string(raw), "ssh://git@github.com/me/homelab.git", tc.url, 1)
			root := seedCopy(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n", "flux/cluster.yaml": instance})
			res, code, _ := ansibletest.Run(t, module, run, map[string]any{"path": root, "secrets": seeded, "known_hosts": tc.knownHosts})
			if tc.refused == "" {
				assert.Equal(t, 0, code, res["msg"])
				return
			}
			require.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.refused)
		})
	}
}

// A credential in the repository fails the check, named by file and kind,
// its value nowhere in the result.
func TestCredentialInTheRepository(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	const password = "pr1vate-Pa55word"
	root := seedCopy(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n",
		"db-secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: " + password + "\n"})
	for range 2 { // the second run's builds come from the cache; the scan does not
		res, code, raw := ansibletest.Run(t, module, run, map[string]any{"path": root, "secrets": seeded, "known_hosts": "github"})
		require.Equal(t, 1, code, res)
		assert.Equal(t, "A push of "+root+" would publish credentials: db-secret.yaml holds an unencrypted Kubernetes Secret db (stringData) (line 6), "+
			"and the repository directory is not a git work tree that could ignore it: pushed, it would be published; fix: move it out of the repository, or encrypt it with SOPS", res["msg"])
		assert.NotContains(t, raw, password)
	}
}

// Seed 000's own layout: flux/cluster.yaml inside sync.path flux runs,
// warned with the consequence and the fixes; with host_network the play's
// FluxInstance is not git's, and the check fails.
func TestSeed000LayoutRunsWarned(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	raw, err := os.ReadFile("testdata/seed/flux/cluster.yaml")
	require.NoError(t, err)
	inFlux := strings.Replace(string(raw), "path: clusters/home", "path: flux", 1)
	root := seedCopy(t, map[string]string{".sourceignore": "!/apps/branding/icon.png\n", "flux/cluster.yaml": inFlux})
	require.NoError(t, os.Rename(filepath.Join(root, "clusters", "home", "apps.yaml"), filepath.Join(root, "flux", "apps.yaml")))
	args := map[string]any{"path": root, "secrets": seeded, "known_hosts": "github"}
	for i := range 2 { // the second run's report comes from the cache, its warning too
		res, code, _ := ansibletest.Run(t, module, run, args)
		require.Equal(t, 0, code, res)
		assert.Equal(t, i == 1, res["cached"])
		require.Len(t, res["warnings"], 1)
		assert.Contains(t, res["warnings"].([]any)[0], "applies the FluxInstance flux-system/flux (flux/cluster.yaml): Flux reconciles its own FluxInstance")
		assert.Contains(t, res["warnings"].([]any)[0], "fix: annotate it `kustomize.toolkit.fluxcd.io/prune: disabled`")
	}
	args["host_network"] = true
	res, code, _ := ansibletest.Run(t, module, run, args)
	require.Equal(t, 1, code, res)
	assert.Contains(t, res["msg"], "differs from the one the play applies")
}
