//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/registry"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// moduleNames are the collection's modules (internal/registry), sorted.
func moduleNames() []string {
	var names []string
	for _, m := range registry.Modules {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// TestRelease is the release a user installs (every e2e test runs on it):
// a tarball Galaxy takes, with the node binaries for every platform and no
// controller binary, which the first controller-side task fetches from the
// release once, checks and caches; a payload that is not this build's is
// refused and nothing is kept.
func TestRelease(t *testing.T) {
	c := installCollection(t)
	r := installed.release

	info, err := os.Stat(r.Tarball)
	require.NoError(t, err)
	t.Logf("release tarball %s: %.1f MB", filepath.Base(r.Tarball), float64(info.Size())/(1<<20))
	assert.LessOrEqual(t, info.Size(), int64(20<<20), "Galaxy takes at most 20 MB")
	payloads, _ := filepath.Glob(filepath.Join(r.Dir, "gitops-k3s_flux-"+r.Version+"-controller-*.xz"))
	assert.Len(t, payloads, 4, "linux and darwin, amd64 and arm64")
	for _, p := range payloads {
		if info, err := os.Stat(p); assert.NoError(t, err) {
			t.Logf("%s: %.1f MB", filepath.Base(p), float64(info.Size())/(1<<20))
		}
	}

	root := filepath.Join(c.path, "ansible_collections", "gitops", "k3s_flux")
	controllers, _ := filepath.Glob(filepath.Join(root, "plugins", "bin", "*", "controller"))
	assert.Empty(t, controllers, "no controller binary in the tarball")
	for _, node := range []string{"plugins/bin/linux_amd64/k3s_node", "plugins/bin/linux_arm64/k3s_node", "plugins/bin/linux_arm/k3s_node"} {
		assert.FileExists(t, filepath.Join(root, node))
	}
	// ansible-doc -l lists every module, without a warning: installed from the release, and from
	// the source tree (what make collection packs).
	source := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(source, "ansible_collections", "gitops"), 0o755))
	require.NoError(t, os.Symlink(c.root, filepath.Join(source, "ansible_collections", "gitops", "k3s_flux")))
	for from, env := range map[string][]string{"the release": c.env(t), "the source tree": append(c.env(t), "ANSIBLE_COLLECTIONS_PATH="+source)} {
		doc := exec.Command("ansible-doc", "-l", "gitops.k3s_flux")
		doc.Env = env
		out, err := doc.CombinedOutput()
		require.NoError(t, err, "ansible-doc -l from %s: %s", from, out)
		assert.NotContains(t, string(out), "WARNING", from)
		var listed []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			listed = append(listed, strings.TrimPrefix(strings.Fields(line)[0], "gitops.k3s_flux."))
		}
		assert.Equal(t, moduleNames(), listed, "ansible-doc -l from %s", from)
	}

	// A play on the controller: flux_status_info with a kubeconfig that is not
	// there fails in the binary (so it ran), naming the file.
	dir := t.TempDir()
	play := filepath.Join(dir, "status.yml")
	require.NoError(t, os.WriteFile(play, []byte(`- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - gitops.k3s_flux.flux_status_info:
        kubeconfig: `+filepath.Join(dir, "missing-kubeconfig")+`
`), 0o644))
	run := func(env ...string) playResult {
		return runIn(context.Background(), dir, append(c.env(t), env...), "ansible-playbook", "-i", "localhost,", play)
	}
	cache := "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")

	t.Run("fetched once, then cached", func(t *testing.T) {
		before := r.Fetched()
		for i := 0; i < 2; i++ {
			res := run(cache)
			require.Error(t, res.err)
			assert.Contains(t, res.output, "missing-kubeconfig", "the binary ran: %s", res.output)
		}
		assert.Equal(t, before+1, r.Fetched(), "one fetch for two runs")
		files, _ := filepath.Glob(filepath.Join(dir, "cache", "gitops.k3s_flux", "controller", "linux_amd64", "controller-*"))
		var kept []string
		for _, f := range files {
			if !strings.HasSuffix(f, ".checked") {
				kept = append(kept, f)
			}
		}
		require.Len(t, kept, 1)
		assert.FileExists(t, kept[0]+".checked", "its sum checked in this run, recorded beside it")
		info, err := os.Stat(kept[0])
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	})

	t.Run("the names before 0.1.0 still work", func(t *testing.T) {
		old := filepath.Join(dir, "old-name.yml")
		raw, err := os.ReadFile(play)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(old, []byte(strings.Replace(string(raw), "flux_status_info", "flux_status", 1)), 0o644))
		res := runIn(context.Background(), dir, append(c.env(t), cache), "ansible-playbook", "-i", "localhost,", old)
		require.Error(t, res.err)
		assert.Contains(t, res.output, "missing-kubeconfig", "redirected to flux_status_info, whose binary ran: %s", res.output)
	})

	t.Run("a payload of another build is refused", func(t *testing.T) {
		other := t.TempDir()
		xz := exec.Command("sh", "-c", "echo not this build | xz >"+filepath.Join(other, "gitops-k3s_flux-"+r.Version+"-controller-linux_amd64.xz"))
		require.NoError(t, xz.Run())
		fresh := "XDG_CACHE_HOME=" + filepath.Join(dir, "cache2")
		res := run(fresh, "GITOPS_K3S_FLUX_RELEASE_URL=file://"+other)
		require.Error(t, res.err)
		assert.Regexp(t, `could not fetch the controller binary for linux_amd64 from file://.*: it unpacks to a binary whose sha256 is [0-9a-f]{64}; this collection expects [0-9a-f]{64}`, res.output)
		left, _ := filepath.Glob(filepath.Join(dir, "cache2", "gitops.k3s_flux", "controller", "linux_amd64", "*"))
		for _, f := range left {
			assert.True(t, strings.HasSuffix(f, ".lock"), "nothing kept: %s", f)
		}
	})
}

// TestHermeticWithTheCollectionInstalled: every e2e test runs as a user who
// already installed this version of the collection the README's way, into
// ~/.ansible/collections, where a plain ansible-galaxy sees it and a plain
// play runs it (there it is a decoy whose plays fail saying so). The
// tests' own Ansible sees only the copy they installed.
func TestHermeticWithTheCollectionInstalled(t *testing.T) {
	c := installCollection(t)
	users := filepath.Join(installed.userHome, ".ansible", "collections")
	// The user's own shell: their HOME, none of the tests' ANSIBLE_* settings.
	plain := append(bed.EnvWithout("ANSIBLE_", "HOME="), "HOME="+installed.userHome)
	list := func(env []string) string {
		cmd := exec.Command("ansible-galaxy", "collection", "list", "gitops.k3s_flux")
		cmd.Dir, cmd.Env = t.TempDir(), env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}

	t.Run("the user's copy is there", func(t *testing.T) {
		out := list(plain)
		assert.Contains(t, out, users, out)
		assert.Contains(t, out, installed.release.Version, out)
		res := runIn(context.Background(), t.TempDir(), plain, "ansible-playbook", "-i", "localhost,", "gitops.k3s_flux.reset")
		require.Error(t, res.err)
		assert.Contains(t, res.output, bed.DecoyMessage)
	})

	t.Run("the tests see only their own", func(t *testing.T) {
		out := list(c.env(t))
		assert.Contains(t, out, c.path, out)
		assert.NotContains(t, out, users, out)
	})
}
