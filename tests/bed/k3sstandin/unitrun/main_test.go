package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realUnit is the unit k3s's install.sh (create_systemd_service_file)
// writes for `INSTALL_K3S_EXEC="server --node-label=x='y z'"`.
const realUnit = `[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
EnvironmentFile=-/etc/systemd/system/k3s.service.env
KillMode=process
Delegate=yes
User=root
# Having non-zero Limit*s causes performance problems due to accounting overhead
# in the kernel. We recommend using cgroups to do container-local accounting.
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s \
    server \
	'--node-label=x='\''y z'\''' \
	'--disable=traefik' \

`

func TestParseUnit(t *testing.T) {
	u, err := parseUnit("k3s", realUnit)
	require.NoError(t, err)
	assert.Equal(t, []string{"-/etc/default/k3s", "-/etc/sysconfig/k3s", "-/etc/systemd/system/k3s.service.env"}, u.envFiles)
	assert.Equal(t, []string{"-/sbin/modprobe br_netfilter", "-/sbin/modprobe overlay"}, u.pre)
	assert.Equal(t, map[string]string{"LimitNOFILE": "1048576", "LimitNPROC": "infinity", "LimitCORE": "infinity"}, u.limits)
	argv, err := execWords(u.start, u.name, envLookup(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr/local/bin/k3s", "server", "--node-label=x='y z'", "--disable=traefik"}, argv)

	// The product's own install: no flags, the continuation ends at the empty line.
	u, err = parseUnit("k3s-agent", "[Service]\nExecStart=/usr/local/bin/k3s \\\n    agent \\\n\n")
	require.NoError(t, err)
	argv, err = execWords(u.start, u.name, envLookup(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr/local/bin/k3s", "agent"}, argv)
}

func TestExecWords(t *testing.T) {
	lookup := envLookup([]string{"A=one two", "B=x"})
	for _, tc := range []struct {
		line, err string
		want      []string
	}{
		{line: `/bin/k3s "a b" c\ d`, want: []string{"/bin/k3s", "a b", "c d"}},
		{line: `/bin/k3s $A ${B}y $$B %N`, want: []string{"/bin/k3s", "one", "two", "xy", "$B", "k3s"}},
		{line: `k3s server`, err: "k3s: not an absolute path"},
		{line: `/bin/k3s 'open`, err: "unbalanced quotes"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := execWords(tc.line, "k3s", lookup)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseEnvFile(t *testing.T) {
	// As dash's `export` prints them, which install.sh's create_env_file copies.
	got, err := parseEnvFile("# c\n\nK3S_TOKEN='a'\"'\"'b'\nHTTP_PROXY='http://u:p@proxy:3128'\nNO_PROXY=\"x,y\"\nPLAIN=v  \n")
	require.NoError(t, err)
	assert.Equal(t, []string{"K3S_TOKEN=a'b", "HTTP_PROXY=http://u:p@proxy:3128", "NO_PROXY=x,y", "PLAIN=v"}, got)
	_, err = parseEnvFile("A='x\n")
	assert.EqualError(t, err, "A: unbalanced quotes")
}

// TestListenMarksActive: the first READY=1, alone or among other fields,
// replaces the unit's state and journals systemd's "Started" line once.
func TestListenMarksActive(t *testing.T) {
	dir := t.TempDir()
	socket, state, journal := filepath.Join(dir, "k3s.notify"), filepath.Join(dir, "k3s.state"), filepath.Join(dir, "k3s.log")
	require.NoError(t, os.WriteFile(state, []byte("activating start\n"), 0o644))
	go func() { _ = listen(socket, state, journal, "k3s") }()
	require.Eventually(t, func() bool { _, err := os.Stat(socket); return err == nil }, 10*time.Second, 10*time.Millisecond)
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	for _, msg := range []string{"STATUS=starting\n", "MAINPID=1\nREADY=1\n", "READY=1\n"} {
		_, err = conn.Write([]byte(msg))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		raw, _ := os.ReadFile(state)
		return string(raw) == "active running\n"
	}, 10*time.Second, 10*time.Millisecond)
	// The second READY=1 must journal nothing more. Read a moment later: on a slow machine a
	// second line could only come too late to be seen (the test passing), never fail it.
	time.Sleep(100 * time.Millisecond)
	raw, err := os.ReadFile(journal)
	require.NoError(t, err)
	assert.Regexp(t, `^\d+ Started k3s\.service - Lightweight Kubernetes\.\n$`, string(raw))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "no temporary state file left")
}
