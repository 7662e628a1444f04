//go:build e2e

// Package e2e runs the collection the way users do: the built collection
// installed with ansible-galaxy, real ansible-playbook (Debian's
// ansible-core), real SSH to test hosts in network namespaces.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// collection is an installed copy of the collection built from this tree.
type collection struct {
	root string // repository root
	path string // ANSIBLE_COLLECTIONS_PATH holding the installed collection
}

// installed is the collection the tests share, built and installed once per
// run as a user gets it: make release, served by a Galaxy stand-in on
// loopback, installed with ansible-galaxy -r requirements.yml; the first
// controller-side task fetches the controller binary from the release there
// into the cache (XDG_CACHE_HOME) under dir.
//
// Every Ansible command runs as a user who already installed the collection
// the README's way: HOME is userHome, whose ~/.ansible/collections holds a
// decoy of the same version (bed.Release.UserHomeWithCollection), so a test
// that is not hermetic fails.
var installed struct {
	once     sync.Once
	dir      string
	path     string
	userHome string
	release  *bed.Release
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := haBed.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "the shared HA bed down:", err)
	}
	// Again at the very end, where CI's excerpt of a failed run looks.
	for _, report := range append(failedPlays.lines, bed.FailureReports()...) {
		fmt.Fprintln(os.Stderr, report)
	}
	if installed.release != nil {
		_ = installed.release.Close()
	}
	if installed.dir != "" {
		_ = os.RemoveAll(installed.dir)
	}
	os.Exit(code)
}

// installCollection builds the release and installs it from the Galaxy
// stand-in, as a user would, once for all the tests.
func installCollection(t *testing.T) collection {
	t.Helper()
	root := golden.RepoRoot(t)
	installed.once.Do(func() {
		installed.path, installed.err = installRelease(root)
	})
	require.NoError(t, installed.err)
	return collection{root: root, path: installed.path}
}

func installRelease(root string) (string, error) {
	dir, err := os.MkdirTemp("", "k3sf-e2e-collection-")
	if err != nil {
		return "", err
	}
	installed.dir = dir
	r, err := bed.BuildRelease(root, dir)
	if err != nil {
		return "", err
	}
	if err := r.Serve(); err != nil {
		return "", err
	}
	installed.release = r
	if installed.userHome, err = r.UserHomeWithCollection(dir); err != nil {
		return "", err
	}
	return r.Install(dir)
}

// concurrent is how many tests of a pass parallel lets run at once; the longest starts even
// when that many run, and counts among them while it runs.
const concurrent = 2

// running counts this pass's tests that parallel let run.
var running struct {
	sync.Mutex
	free *sync.Cond
	n    int
}

func init() { running.free = sync.NewCond(&running.Mutex) }

// parallel runs t beside the other tests of its pass once the sequential ones are done, as
// t.Parallel() does, in an order of our own. go test starts its paused tests in no order it
// promises: it started the longest, TestRealK3sEmbeddedEtcd, last in both passes, so that its last
// ten minutes ran alone. longest is for that one: it starts at once; the others wait while
// `concurrent` tests run. The Makefile raises go test's -parallel above the number of tests, so
// go test never makes one wait.
func parallel(t *testing.T, longest bool) {
	t.Helper()
	t.Parallel()
	// go test's duration of the test counts this wait too: said here, for reading the durations.
	asked := time.Now()
	running.Lock()
	for !longest && running.n >= concurrent {
		running.free.Wait()
	}
	running.n++
	running.Unlock()
	if waited := time.Since(asked); waited >= time.Second {
		t.Logf("started after %s waiting for another test of the pass to end", waited.Round(time.Second))
	}
	t.Cleanup(func() {
		running.Lock()
		running.n--
		running.Unlock()
		running.free.Signal()
	})
}

// pipelining says whether this pass runs with Ansible's pipelining on
// (make test-e2e: off with Debian's ansible-core, Ansible's default; on
// with the newer one), so both ways a task reaches a node are tested.
func pipelining() bool { return strings.EqualFold(os.Getenv("E2E_PIPELINING"), "true") }

// env is the environment of the tests' Ansible commands: hermetic
// (bed.AnsibleEnv), with config as the ansible.cfg they read (empty: one of
// their own), run by the user of installed.userHome.
func (c collection) env(t *testing.T) []string {
	return c.envWith(t, "")
}

func (c collection) envWith(t *testing.T, config string) []string {
	t.Helper()
	env, err := bed.AnsibleEnv(t.TempDir(), c.path, config)
	require.NoError(t, err)
	return append(env,
		"HOME="+installed.userHome,
		"ANSIBLE_PIPELINING="+strconv.FormatBool(pipelining()),
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_RETRY_FILES_ENABLED=0",
		"ANSIBLE_SSH_CONTROL_PATH_DIR="+t.TempDir(),
		"GITOPS_K3S_FLUX_RELEASE_URL="+installed.release.ReleaseURL,
		"XDG_CACHE_HOME="+filepath.Join(installed.dir, "cache"),
	)
}

// configIn is dir's ansible.cfg, which Ansible reads when it runs there, or "".
func configIn(dir string) string {
	if dir == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "ansible.cfg")); err != nil {
		return ""
	}
	return filepath.Join(dir, "ansible.cfg")
}

// playResult is one ansible-playbook run.
type playResult struct {
	output   string
	err      error
	duration time.Duration
	recap    map[string]map[string]int
}

var recapLine = regexp.MustCompile(`(?m)^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$`)

// play runs ansible-playbook and parses its PLAY RECAP.
func (c collection) play(t *testing.T, args ...string) playResult {
	t.Helper()
	return c.playWith(t, nil, args...)
}

// playWith runs ansible-playbook with extra environment variables.
func (c collection) playWith(t *testing.T, env []string, args ...string) playResult {
	t.Helper()
	return c.playIn(t, "", env, args...)
}

// playIn runs ansible-playbook from dir (its ansible.cfg applies), with
// extra environment variables.
func (c collection) playIn(t *testing.T, dir string, env []string, args ...string) playResult {
	t.Helper()
	r := runIn(context.Background(), dir, append(c.envWith(t, configIn(dir)), env...), "ansible-playbook", args...)
	noteFailure(t, r)
	return r
}

// failedPlays are the fatal lines of the failed plays of failed tests.
var failedPlays struct {
	sync.Mutex
	lines []string
}

// noteFailure keeps the fatal lines of a failed play for the end of the
// run, when the test that ran it fails (a play expected to fail is not
// kept for a test that passes).
func noteFailure(t *testing.T, r playResult) {
	if r.err == nil {
		return
	}
	var fatal []string
	for _, line := range strings.Split(r.output, "\n") {
		if strings.HasPrefix(line, "fatal: ") || strings.HasPrefix(line, "failed: ") || strings.Contains(line, "FAILED! =>") {
			fatal = append(fatal, bed.Clip(line, 600))
		}
	}
	if len(fatal) == 0 {
		fatal = []string{fmt.Sprintf("%v, no fatal line; the output ends: %s", r.err, bed.Clip(r.output[max(0, len(r.output)-400):], 400))}
	}
	t.Cleanup(func() {
		if t.Failed() {
			failedPlays.Lock()
			failedPlays.lines = append(failedPlays.lines, fmt.Sprintf("a play of %s failed:\n  %s", t.Name(), strings.Join(fatal, "\n  ")))
			failedPlays.Unlock()
		}
	})
}

// justIn runs the just recipes of the repository at dir (without a
// KUBECONFIG from the environment: the recipes find their own).
func (c collection) justIn(t *testing.T, dir string, args ...string) playResult {
	t.Helper()
	var env []string
	for _, kv := range c.env(t) {
		// The recipes run ansible-playbook where the repository's ansible.cfg is.
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "ANSIBLE_CONFIG=") {
			env = append(env, kv)
		}
	}
	return runIn(context.Background(), dir, env, "just", args...)
}

// assertRootOnly checks that path on the host is mode 0600 and owned by
// root: where a file holding a secret must be.
func assertRootOnly(t *testing.T, h *testhosts.Host, path string) {
	t.Helper()
	stat, err := h.Exec("stat -c '%a %U %G' " + path)
	require.NoError(t, err, h.Name)
	assert.Equal(t, "600 root root\n", stat, h.Name)
}

// runIn runs command from dir with env and parses the play recap in its output.
func runIn(ctx context.Context, dir string, env []string, command string, args ...string) playResult {
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Dir = dir
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return parseRecap(playResult{output: string(out), err: err, duration: time.Since(start), recap: map[string]map[string]int{}})
}

// parseRecap fills r.recap from the PLAY RECAP in r.output.
func parseRecap(r playResult) playResult {
	for _, m := range recapLine.FindAllStringSubmatch(r.output, -1) {
		counts := map[string]int{}
		for _, kv := range strings.Fields(m[2]) {
			k, v, _ := strings.Cut(kv, "=")
			counts[k], _ = strconv.Atoi(v)
		}
		r.recap[m[1]] = counts
	}
	return r
}

// changed returns each host's changed count.
func (r playResult) changed() map[string]int {
	out := map[string]int{}
	for h, counts := range r.recap {
		out[h] = counts["changed"]
	}
	return out
}

// clusterPlayArgs are ansible-playbook's arguments for playbooks/k8s.yml on
// the bed's hosts without the hand-off (role k8s_cluster alone): the bed's
// install script (with bed.Options.RealK3s, k3s's own and the built k3s's
// release), the kubeconfig in dir, and extra variables, written to
// dir/vars.json.
func clusterPlayArgs(t *testing.T, c collection, b *bed.Bed, dir string, extra map[string]any) []string {
	t.Helper()
	vars := map[string]any{
		"flux_bootstrap_enabled":      false,
		"k8s_cluster_kubeconfig_dest": filepath.Join(dir, "kubeconfig"),
	}
	if b.Real != nil {
		// k3s's own install.sh, downloading the built k3s from the bed as from GitHub's releases.
		vars["k8s_cluster_install_script_url"] = b.Real.InstallURL
		vars["k8s_cluster_k3s_release_url"] = b.Real.ReleaseURL
		vars["k8s_cluster_k3s_version"] = b.Real.Version
	} else {
		vars["k8s_cluster_install_script_url"] = b.K3s.InstallURL
	}
	for k, v := range extra {
		vars[k] = v
	}
	path := filepath.Join(dir, "vars.json")
	writeJSON(t, path, vars)
	return []string{"-i", b.Hosts.Inventory, filepath.Join(c.root, "playbooks", "k8s.yml"), "-e", "@" + path}
}

// roleSeconds is a role's default for a variable that counts seconds
// (roles/<role>/defaults/main.yml), as a duration.
func roleSeconds(t *testing.T, c collection, role, name string) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(c.root, "roles", role, "defaults", "main.yml"))
	require.NoError(t, err)
	var defaults map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &defaults))
	seconds, ok := defaults[name].(float64)
	require.True(t, ok, "role %s: %s is not a number of seconds: %v", role, name, defaults[name])
	return time.Duration(seconds) * time.Second
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o600))
}

// TestAnsibleCoreVersion: the run uses the ansible-core the matrix asked
// for (make test-e2e sets E2E_ANSIBLE_CORE for each pass).
func TestAnsibleCoreVersion(t *testing.T) {
	want := os.Getenv("E2E_ANSIBLE_CORE")
	out, err := exec.Command("ansible-playbook", "--version").CombinedOutput()
	require.NoError(t, err, string(out))
	first := strings.SplitN(string(out), "\n", 2)[0]
	t.Logf("%s", first)
	if want == "" {
		t.Skip("E2E_ANSIBLE_CORE not set: whatever ansible-playbook is on PATH")
	}
	assert.Contains(t, first, "[core "+want+"]")
}
