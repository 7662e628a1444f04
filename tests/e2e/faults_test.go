//go:build e2e

package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestNodeLostMidPlay pulls node3's network link while its node task installs k3s
// (the bed holds node3's download of k3s until then): node3 fails UNREACHABLE
// (SSH keepalives, not TCP's ~15 minutes), node1 and node2 complete and are Ready; with the link
// back, the same play converges with no manual step.
func TestNodeLostMidPlay(t *testing.T) {
	// Mostly waiting (SSH keepalives, k3s's retries and restarts): run beside the other
	// waiting test, TestNodeLostMidPlay or TestStrictK3sJoin, once the others are done.
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfl", Subnet: "10.213.9", Controllers: 1, Workers: 2})
	dir := t.TempDir()
	// The role's own wait (k8s_cluster_wait_timeout): node1's and node2's must succeed.
	args := clusterPlayArgs(t, c, b, dir, map[string]any{"ansible_python_interpreter": "/usr/bin/python3"})
	node3 := b.Hosts.Host("node3")

	t.Run("node3 lost", func(t *testing.T) {
		asked, release := b.K3s.HoldDownload(node3.Addr)
		defer release()
		cmd := exec.Command("ansible-playbook", args...)
		cmd.Env = c.env(t)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()

		// However long the play takes to get there (facts, preflight, node1's install and wait):
		// go test's -timeout ends a play that never does.
		select {
		case err := <-done:
			t.Fatalf("the play ended (%v) before node3 asked for k3s:\n%s", err, out.String())
		case <-asked: // k3s_node wrote node3's config, and its install waits on the download
		}
		_, err := node3.Exec("test -e /etc/rancher/k3s/config.yaml")
		require.NoError(t, err, "the config is written before the install")
		require.NoError(t, node3.SetLink(false))
		cut := time.Now()
		release()
		t.Logf("link cut %s after the play started", cut.Sub(start).Round(100*time.Millisecond))
		select {
		case err = <-done:
		case <-time.After(5 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("the play hung after the link was cut:\n%s", out.String())
		}
		output := out.String()
		t.Logf("play ended %s after the cut", time.Since(cut).Round(100*time.Millisecond))
		require.Error(t, err, "node3 failed, so the play does")
		r := parseRecap(playResult{output: output, recap: map[string]map[string]int{}})
		assert.Equal(t, 1, r.recap["node3"]["unreachable"], output)
		// Pipelined, the cut can land while sudo's answer is awaited: Ansible then reports that
		// timeout; or while the module runs in the task's one command (the binary kept on the
		// node since the host's first task): its ssh exits 255 with the args sent on its stdin,
		// which Ansible reports as data that could not be sent. Each still UNREACHABLE (as for a
		// Python module).
		assert.Regexp(t, `fatal: \[node3\]: UNREACHABLE! => .*"msg": "(Task failed: )?(Failed to connect to the host via ssh|Timeout \(\d+s\) waiting for privilege escalation prompt|Data could not be sent to remote host \\"`+regexp.QuoteMeta(node3.Addr)+`\\"\. Make sure this host can be reached over ssh)`, output)
		for _, h := range []string{"node1", "node2"} {
			assert.Equal(t, 0, r.recap[h]["failed"]+r.recap[h]["unreachable"], "%s completes: %s", h, output)
		}
		assert.Contains(t, output, "node1 Ready control-plane")
		assert.Contains(t, output, "node2 Ready")
	})

	t.Run("link back", func(t *testing.T) {
		require.NoError(t, node3.SetLink(true))
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		t.Logf("re-run with the link back: %s", r.duration.Round(100*time.Millisecond))
		assert.Contains(t, r.output, "node3 Ready")
		r = c.play(t, args...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "node3": 0, "localhost": 0}, r.changed(), r.output)
	})
}
