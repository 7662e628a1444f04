package main

import (
	"testing"

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
