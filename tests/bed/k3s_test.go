//go:build integration

package bed_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// TestK3sStandIn installs the stand-in on SSH test hosts as the real
// installer would be used, and checks what k3s would do.
func TestK3sStandIn(t *testing.T) {
	b := bed.Start(t, bed.Options{Name: "k3sfk", Subnet: "10.213.3", Controllers: 1, Workers: 1})
	ctx := t.Context()
	kc, _, err := b.Clients()
	require.NoError(t, err)
	server, agent := b.Hosts.Host("node1"), b.Hosts.Host("node2")
	const token = "standin-cluster-secret"

	writeConfig := func(h interface{ Exec(string) (string, error) }, content string) {
		_, err := h.Exec("mkdir -p /etc/rancher/k3s && cat > /etc/rancher/k3s/config.yaml <<'EOF'\n" + content + "EOF")
		require.NoError(t, err)
	}
	install := func(h interface{ Exec(string) (string, error) }, env string) (string, error) {
		return h.Exec(fmt.Sprintf("curl -sfL %s | %s INSTALL_K3S_VERSION=v1.36.2+k3s1 sh -", b.K3s.InstallURL, env))
	}

	t.Run("server installs, writes its files and registers its node", func(t *testing.T) {
		writeConfig(server, "token: "+token+"\ncluster-init: true\ntls-san:\n  - k8s.test\nnode-label:\n  - zone=a\nnot-a-flag: 1\n")
		out, err := install(server, "")
		require.NoError(t, err, out)
		version, err := server.Exec("k3s --version")
		require.NoError(t, err)
		assert.Contains(t, version, "k3s version v1.36.2+k3s1")
		nodeToken, err := server.Exec("cat /var/lib/rancher/k3s/server/node-token")
		require.NoError(t, err)
		assert.Regexp(t, `^K10[0-9a-f]{64}::server:`+token+"\n$", nodeToken)
		mode, err := server.Exec("stat -c %a /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		assert.Equal(t, "600\n", mode)
		log, err := server.Exec("cat /var/lib/rancher/k3s/standin/invocations.log")
		require.NoError(t, err)
		assert.Contains(t, log, "Unknown flag --not-a-flag found in config.yaml, skipping")
		assert.NotContains(t, log, token, "the invocation log masks the token")
		_, err = server.Exec("ls /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		require.NoError(t, bed.WaitNodeReady(ctx, kc, "node1"))
		n, err := kc.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "a", n.Labels["zone"])
		assert.Equal(t, "true", n.Labels["node-role.kubernetes.io/control-plane"])
		assert.Equal(t, "true", n.Labels["node-role.kubernetes.io/etcd"])
		assert.Contains(t, n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: server.Addr})
	})

	t.Run("k3s.yaml works inside the host and, rewritten, from the controller with TLS verification", func(t *testing.T) {
		kubeconfig, err := server.Exec("cat /etc/rancher/k3s/k3s.yaml")
		require.NoError(t, err)
		assert.Contains(t, kubeconfig, "server: https://127.0.0.1:6443")
		for _, endpoint := range []string{"https://" + server.Addr + ":6443", "https://k8s.test:6443"} {
			cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(strings.Replace(kubeconfig, "https://127.0.0.1:6443", endpoint, 1)))
			require.NoError(t, err)
			if strings.Contains(endpoint, "k8s.test") {
				cfg.Host = "https://" + server.Addr + ":6443"
				cfg.TLSClientConfig.ServerName = "k8s.test" // the tls-san entry
			}
			client, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			_, err = client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
			assert.NoError(t, err, endpoint)
		}
		// A name that is not in tls-san is refused, as k3s's certificate holds only the names it is given.
		cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(strings.Replace(kubeconfig, "https://127.0.0.1:6443", "https://"+server.Addr+":6443", 1)))
		require.NoError(t, err)
		cfg.TLSClientConfig.ServerName = "k3s-api.home.arpa"
		client, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate is valid for", "refused for want of the name")
		code, err := server.Exec("curl -s -o /dev/null -w '%{http_code}' --cacert /var/lib/rancher/k3s/server/tls/server-ca.crt https://127.0.0.1:6443/version")
		require.NoError(t, err)
		assert.Equal(t, "200", code, "the API server answers on 127.0.0.1:6443 inside the host, TLS verified")
	})

	// k3s's units are Type=notify with TimeoutStartSec=0 and Restart=always: an agent that
	// cannot join retries for ever and never reports ready, so a blocking start never returns;
	// one that exits is restarted every 5 s ("activating (auto-restart)").
	unitState := func() string {
		out, err := agent.Exec("systemctl show --property=ActiveState,SubState k3s-agent")
		require.NoError(t, err)
		return strings.Join(strings.Fields(out), " ")
	}
	neverJoins := func(t *testing.T, config, logged string) {
		writeConfig(agent, config)
		out, err := install(agent, "INSTALL_K3S_EXEC=agent INSTALL_K3S_SKIP_START=true")
		require.NoError(t, err, out)
		out, err = agent.Exec("timeout 3 systemctl restart k3s-agent; echo exit=$?")
		require.NoError(t, err)
		assert.Contains(t, out, "exit=124", "a blocking start waits for ever (TimeoutStartSec=0)")
		assert.Equal(t, "ActiveState=activating SubState=start", unitState())
		require.Eventually(t, func() bool {
			journal, err := agent.Exec("journalctl -u k3s-agent -n 5 --no-pager")
			return err == nil && strings.Contains(journal, logged)
		}, 20*time.Second, 200*time.Millisecond, "the agent logs why, again and again")
		_, err = kc.CoreV1().Nodes().Get(ctx, "node2", metav1.GetOptions{})
		assert.Error(t, err, "no node registered")
		_, err = agent.Exec("systemctl stop k3s-agent")
		require.NoError(t, err)
		assert.Equal(t, "ActiveState=inactive SubState=dead", unitState())
	}

	t.Run("an agent with a wrong token never joins, and never reports ready", func(t *testing.T) {
		neverJoins(t, "server: https://"+server.Addr+":6443\ntoken: wrong-secret\n", "Failed to validate connection to cluster at https://"+server.Addr+":6443")
	})

	t.Run("an agent with an unreachable server never joins, and never reports ready", func(t *testing.T) {
		neverJoins(t, "server: https://"+server.Addr+":6999\ntoken: "+token+"\n", "failed to get CA certs")
	})

	t.Run("--no-block returns at once", func(t *testing.T) {
		writeConfig(agent, "server: https://"+server.Addr+":6999\ntoken: "+token+"\n")
		start := time.Now()
		_, err := agent.Exec("systemctl start --no-block k3s-agent")
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Equal(t, "ActiveState=activating SubState=start", unitState())
		// A stop during the start, maybe before k3s's pid is known, stops k3s at once, as
		// systemd's stop job does (the stand-in's own last resort, SIGKILL, comes after 10 s).
		start = time.Now()
		_, err = agent.Exec("systemctl stop k3s-agent")
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Equal(t, "ActiveState=inactive SubState=dead", unitState())
	})

	t.Run("a token given to the install script stays in the unit's environment file", func(t *testing.T) {
		writeConfig(agent, "server: https://"+server.Addr+":6443\n")
		out, err := install(agent, "INSTALL_K3S_EXEC=agent INSTALL_K3S_SKIP_START=true K3S_TOKEN=cli-secret-token")
		require.NoError(t, err, out)
		// Stopped once the stand-in recorded this start (a line more in its log), however long
		// the machine takes to get there.
		_, err = agent.Exec(`log=` + bed.InvocationsLog + `; n=$(cat $log 2>/dev/null | wc -l); systemctl start --no-block k3s-agent &&
			until [ "$(cat $log 2>/dev/null | wc -l)" -gt "$n" ]; do sleep 0.1; done && systemctl stop k3s-agent`)
		require.NoError(t, err)
		log, err := agent.Exec("cat " + bed.InvocationsLog)
		require.NoError(t, err)
		assert.NotContains(t, log, "cli-secret-token")
		// As install.sh's create_env_file: K3S_ variables go to the environment file, 0600, and
		// the unit (0644) has only the command.
		env, err := agent.Exec("stat -c %a /etc/systemd/system/k3s-agent.service.env && cat /etc/systemd/system/k3s-agent.service.env")
		require.NoError(t, err)
		assert.Equal(t, "600\nK3S_TOKEN='cli-secret-token'\n", env)
		unit, err := agent.Exec("cat /etc/systemd/system/k3s-agent.service")
		require.NoError(t, err)
		assert.NotContains(t, unit, "cli-secret-token")
		assert.Contains(t, unit, "ExecStart=/usr/local/bin/k3s \\\n    agent \\\n\n")
	})

	t.Run("an agent that exits is restarted: activating (auto-restart), and the start job fails", func(t *testing.T) {
		writeConfig(agent, "server: https://"+server.Addr+":6443\ntoken: "+token+"\ncluster-init: true\n")
		out, err := install(agent, "INSTALL_K3S_EXEC=agent")
		require.Error(t, err)
		assert.Contains(t, out, "Job for k3s-agent.service failed because the control process exited with error code.")
		require.Eventually(t, func() bool {
			out, err := agent.Exec("systemctl show --property=ActiveState,SubState,NRestarts k3s-agent")
			return err == nil && strings.Contains(out, "SubState=auto-restart") && !strings.Contains(out, "NRestarts=0")
		}, 20*time.Second, 200*time.Millisecond, "restarted after 5 s, and again")
		journal, err := agent.Exec("journalctl -u k3s-agent --no-pager")
		require.NoError(t, err)
		assert.Contains(t, journal, "flag provided but not defined: -cluster-init")
		_, err = agent.Exec("systemctl stop k3s-agent")
		require.NoError(t, err)
		assert.Equal(t, "ActiveState=inactive SubState=dead", unitState())
	})

	t.Run("install.sh skips the start when nothing changed", func(t *testing.T) {
		// The binary, version and unit of the last subtest's install, which is stopped.
		out, err := install(agent, "INSTALL_K3S_EXEC=agent")
		require.NoError(t, err, out)
		assert.Contains(t, out, "No change detected so skipping service start")
		assert.Equal(t, "ActiveState=inactive SubState=dead", unitState(), "left stopped")
	})

	t.Run("an agent joins with the node-token and its labels and taints", func(t *testing.T) {
		nodeToken, err := server.Exec("cat /var/lib/rancher/k3s/server/node-token")
		require.NoError(t, err)
		writeConfig(agent, "server: https://"+server.Addr+":6443\ntoken: "+strings.TrimSpace(nodeToken)+
			"\nnode-label:\n  - disk=ssd\nnode-taint:\n  - dedicated=storage:NoSchedule\n")
		// Only config.yaml changed since the last install: without FORCE_RESTART, install.sh would not start it.
		out, err := install(agent, "INSTALL_K3S_EXEC=agent INSTALL_K3S_FORCE_RESTART=true")
		require.NoError(t, err, out)
		require.NoError(t, bed.WaitNodeReady(ctx, kc, "node2"))
		n, err := kc.CoreV1().Nodes().Get(ctx, "node2", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "ssd", n.Labels["disk"])
		assert.Contains(t, n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule})
		assert.NotContains(t, n.Labels, "node-role.kubernetes.io/control-plane")
	})

	t.Run("a restart applies changed labels", func(t *testing.T) {
		_, err := agent.Exec("sed -i 's/disk=ssd/disk=nvme/' /etc/rancher/k3s/config.yaml && systemctl restart k3s-agent")
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			n, err := kc.CoreV1().Nodes().Get(ctx, "node2", metav1.GetOptions{})
			return err == nil && n.Labels["disk"] == "nvme"
		}, 30*time.Second, 200*time.Millisecond)
		active, err := agent.Exec("systemctl is-active k3s-agent")
		require.NoError(t, err)
		assert.Equal(t, "active\n", active)
	})

	// systemd binds a unit's notify socket before it starts the unit, so a READY=1 sent at once
	// is never lost. The stand-in's listener is a process of its own: here it binds a second
	// late, and the socket file of the listener before it (killed by the restart) is still there.
	t.Run("a restart is reported ready however late the notify socket is bound", func(t *testing.T) {
		const unitrun = testhosts.MachineDir + "/unitrun"
		_, err := agent.Exec("mv " + unitrun + " " + unitrun + ".real && printf '%s\\n' '#!/bin/sh' '[ \"$1\" = listen ] && sleep 1' 'exec " +
			unitrun + ".real \"$@\"' >" + unitrun + " && chmod 755 " + unitrun)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = agent.Exec("mv " + unitrun + ".real " + unitrun) })
		out, err := agent.Exec("timeout 20 systemctl restart k3s-agent; echo exit=$?")
		require.NoError(t, err)
		assert.Equal(t, "exit=0\n", out, "a blocking restart returns once k3s reported ready")
		assert.Equal(t, "ActiveState=active SubState=running", unitState())
	})

	// A re-flashed host that keeps its name has a new node password: the server refuses it for
	// as long as the Node (and so its password Secret) exists, and the agent asks again every 5 s.
	t.Run("a new node password is refused until the Node is deleted", func(t *testing.T) {
		mode, err := agent.Exec("stat -c %a /etc/rancher/node/password")
		require.NoError(t, err)
		assert.Equal(t, "600\n", mode)
		secret, err := kc.CoreV1().Secrets("kube-system").Get(ctx, "node2.node-password.k3s", metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, secret.OwnerReferences, 1, "owned by its Node")
		assert.Equal(t, "node2", secret.OwnerReferences[0].Name)
		// From the next second on: the journal keeps whole seconds.
		since := time.Now().Unix() + 1
		time.Sleep(time.Until(time.Unix(since, 0)))
		_, err = agent.Exec("systemctl stop k3s-agent && rm /etc/rancher/node/password && systemctl start --no-block k3s-agent")
		require.NoError(t, err)
		rejected := "Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag"
		require.Eventually(t, func() bool {
			journal, err := agent.Exec(fmt.Sprintf("journalctl -u k3s-agent --since @%d -o cat --no-pager", since))
			return err == nil && strings.Contains(journal, rejected)
		}, 20*time.Second, 200*time.Millisecond, "the agent logs the refusal")
		assert.Equal(t, "ActiveState=activating SubState=start", unitState())
		journal, err := agent.Exec(fmt.Sprintf("journalctl -u k3s-agent --since @%d -o cat --no-pager", since))
		require.NoError(t, err)
		assert.NotContains(t, journal, "joined", "--since: nothing from before")
		assert.True(t, strings.HasPrefix(journal, "Stopped k3s-agent.service"), journal)

		require.NoError(t, kc.CoreV1().Nodes().Delete(ctx, "node2", metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			out, err := agent.Exec("systemctl is-active k3s-agent")
			return err == nil && out == "active\n"
		}, 30*time.Second, 200*time.Millisecond, "joins once the Node and its Secret are gone")
		require.NoError(t, bed.WaitNodeReady(ctx, kc, "node2"))
	})

	t.Run("a reboot stops everything and boots again: a new boot id, the enabled units started", func(t *testing.T) {
		bootID := func() string {
			out, err := agent.Exec("cat /proc/sys/kernel/random/boot_id")
			if err != nil {
				return ""
			}
			return strings.TrimSpace(out)
		}
		before := bootID()
		require.Regexp(t, `^[0-9a-f-]{36}$`, before)
		// What a reboot ends: a process, and a mount made while the host ran.
		out, err := agent.Exec("setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!; printf 'Filename\tType\tSize\tUsed\tPriority\n/swap\tfile\t1\t0\t-2\n' >/var/lib/testhost/swaps && mount --bind /var/lib/testhost/swaps /proc/swaps")
		require.NoError(t, err, out)
		sleeper, err := strconv.Atoi(strings.TrimSpace(out))
		require.NoError(t, err, out)

		// It returns at once, as systemd's: the same shell goes on in the boot it was called in
		// (shell builtins only: the shutdown that follows kills what is left of the session).
		out, err = agent.Exec(`systemctl reboot; echo "exit=$?"; read id </proc/sys/kernel/random/boot_id; echo "$id"`)
		require.NoError(t, err)
		assert.Equal(t, "exit=0\n"+before+"\n", out, "systemctl reboot returns before the reboot, as systemd's")
		require.Eventually(t, func() bool { after := bootID(); return after != "" && after != before }, 30*time.Second, 200*time.Millisecond, "boots again with a new boot id")
		assert.False(t, testhosts.ProcessAlive(sleeper), "nothing of the last boot runs")
		swaps, err := agent.Exec("cat /proc/swaps")
		require.NoError(t, err)
		assert.NotContains(t, swaps, "/swap\t", "the last boot's mounts are gone")
		_, err = agent.Exec("test -s /etc/rancher/node/password")
		assert.NoError(t, err, "the disk is kept")
		require.Eventually(t, func() bool {
			conn, err := net.DialTimeout("tcp", agent.Addr+":22", time.Second)
			if err == nil {
				_ = conn.Close()
			}
			return err == nil
		}, 10*time.Second, 100*time.Millisecond, "sshd is back")
		require.Eventually(t, func() bool {
			out, err := agent.Exec("systemctl is-active k3s-agent")
			return err == nil && out == "active\n"
		}, 30*time.Second, 200*time.Millisecond, "the enabled unit starts at boot")
		journal, err := agent.Exec("journalctl -u k3s-agent -n 20 -o cat --no-pager")
		require.NoError(t, err)
		assert.Regexp(t, `(?s)Stopped k3s-agent\.service.*Starting k3s-agent\.service`, journal)
		require.NoError(t, bed.WaitNodeReady(ctx, kc, "node2"))
	})

	t.Run("a server restarted with another token refuses to start, as k3s does", func(t *testing.T) {
		writeConfig(server, "token: another-cluster-secret\n")
		out, err := server.Exec("systemctl restart k3s")
		require.Error(t, err, out)
		journal, err := server.Exec("journalctl -u k3s -n 5 --no-pager")
		require.NoError(t, err)
		assert.Contains(t, journal, "bootstrap data already found and encrypted with different token")
		_, err = server.Exec("systemctl stop k3s")
		require.NoError(t, err)
	})
}
