//go:build stress

package bed_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestUnitReadinessUnderRestarts starts the stand-in k3s agent's unit again
// and again (make stress-readiness CYCLES=n, not part of make test) and
// fails at the first start the systemctl stand-in does not mark active
// within a minute once the agent said it joined: the readiness a
// clean-clone run once lost under load (issue 46). The failing cycle's
// journal and the supervisor's trail are printed.
func TestUnitReadinessUnderRestarts(t *testing.T) {
	cycles := 100
	if v, err := strconv.Atoi(os.Getenv("CYCLES")); err == nil && v > 0 {
		cycles = v
	}
	b := bed.Start(t, bed.Options{Name: "k3sfz", Subnet: "10.213.40", Controllers: 1, Workers: 1})
	kc, _, err := b.Clients()
	require.NoError(t, err)
	server, agent := b.Hosts.Host("node1"), b.Hosts.Host("node2")
	const token = "stress-cluster-secret"
	install := func(h interface{ Exec(string) (string, error) }, config, env string) {
		out, err := h.Exec("mkdir -p /etc/rancher/k3s && cat > /etc/rancher/k3s/config.yaml <<'EOF'\n" + config + "EOF\n" +
			fmt.Sprintf("curl -sfL %s | %s INSTALL_K3S_VERSION=v1.36.2+k3s1 sh -", b.K3s.InstallURL, env))
		require.NoError(t, err, out)
	}
	install(server, "token: "+token+"\ncluster-init: true\n", "")
	require.NoError(t, bed.WaitNodeReady(t.Context(), kc, "node1"))
	install(agent, "server: https://"+server.Addr+":6443\ntoken: "+token+"\n", "INSTALL_K3S_EXEC=agent INSTALL_K3S_SKIP_START=true")

	for i := 1; i <= cycles; i++ {
		// The cycle's journal lines start at the mark; "joined" is the agent's READY=1.
		_, err := agent.Exec("systemctl stop k3s-agent && date +%s > /tmp/cycle && systemctl start --no-block k3s-agent")
		require.NoError(t, err)
		var joinedAt time.Time
		deadline := time.Now().Add(10 * time.Minute)
		for {
			state, err := agent.Exec("systemctl is-active k3s-agent || true")
			require.NoError(t, err)
			if strings.TrimSpace(state) == "active" {
				break
			}
			journal, err := agent.Exec("journalctl -u k3s-agent --since @$(cat /tmp/cycle) -o cat")
			require.NoError(t, err)
			if joinedAt.IsZero() && strings.Contains(journal, " joined https://") {
				joinedAt = time.Now()
			}
			if (!joinedAt.IsZero() && time.Since(joinedAt) > time.Minute) || time.Now().After(deadline) {
				trail, _ := agent.Exec("tail -n 40 /var/lib/testhost/systemd/k3s-agent.trail.log")
				t.Fatalf("cycle %d of %d: the unit is %q a minute after the agent joined\njournal:\n%s\nsupervisor's trail:\n%s", i, cycles, strings.TrimSpace(state), journal, trail)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if i%10 == 0 {
			t.Logf("%d of %d starts marked active", i, cycles)
		}
	}
}
