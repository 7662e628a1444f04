//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
)

// TestPrepareBehindProxy: hosts that reach the k3s downloads only through
// an HTTP proxy with a password (bed.Options.ProxyDownloads: the downloads
// on this machine's loopback, the proxy on the test network). Without
// k8s_cluster_proxy the install fails, naming the download; with it, the
// install script (fetched by k3s_node) and the k3s binary (by the script's
// curl) come through the proxy, each unit's environment file holds the
// proxy (0600) with the no_proxy the role adds, k3s runs with it, and no
// output of the run, at -vvv, shows the proxy's password, neither as the URL
// holds it (percent-encoded: it has @ and :) nor decoded; a second run
// changes nothing.
func TestPrepareBehindProxy(t *testing.T) {
	parallel(t, false)
	c := installCollection(t)
	b := bed.Start(t, bed.Options{Name: "k3sfq", Subnet: "10.213.17", Controllers: 1, Workers: 1, ProxyDownloads: true})
	proxy := map[string]any{"http": b.Proxy.URL, "https": b.Proxy.URL, "no_proxy": []any{".home.arpa"}}

	t.Run("no proxy", func(t *testing.T) {
		r := c.play(t, clusterPlayArgs(t, c, b, t.TempDir(), nil)...)
		require.Error(t, r.err)
		flat := strings.Join(strings.Fields(r.output), " ")
		assert.Contains(t, flat, "download the install script: Get \\\""+b.K3s.InstallURL+"\\\"", r.output)
		assert.Empty(t, b.Proxy.Asked())
	})

	args := clusterPlayArgs(t, c, b, t.TempDir(), map[string]any{"k8s_cluster_proxy": proxy})
	t.Run("through the proxy", func(t *testing.T) {
		r := c.play(t, append(args, "-vvv")...)
		require.NoError(t, r.err, r.output)
		for _, form := range b.Proxy.PasswordForms() {
			assert.NotContains(t, r.output, form, "the proxy's password in -vvv output")
		}
		asked := strings.Join(b.Proxy.Asked(), "\n")
		assert.Equal(t, 2, strings.Count(asked, b.K3s.InstallURL), asked)
		assert.Equal(t, 2, strings.Count(asked, b.K3s.BinaryURL), asked)
		noProxy := ".home.arpa,localhost,127.0.0.1,::1,.svc,.cluster.local,10.42.0.0/16,10.43.0.0/16," + b.Hosts.Host("node1").Addr + "," + b.Hosts.Host("node2").Addr + ",node1,node2"
		for host, unit := range map[string]string{"node1": "k3s", "node2": "k3s-agent"} {
			h := b.Hosts.Host(host)
			env, err := h.Exec("stat -c %a /etc/systemd/system/" + unit + ".service.env && cat /etc/systemd/system/" + unit + ".service.env")
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(env, "600\n"), env)
			assert.Contains(t, env, "\nHTTP_PROXY="+b.Proxy.URL+"\nHTTPS_PROXY="+b.Proxy.URL+"\nNO_PROXY="+noProxy+"\n", host)
			// k3s was started with it (its unit's environment file), as the stand-in records.
			runs, err := bed.Invocations(h)
			require.NoError(t, err)
			require.NotEmpty(t, runs, host)
			last := runs[len(runs)-1]
			assert.Equal(t, strings.Replace(b.Proxy.URL, ":"+b.Proxy.PasswordForms()[1]+"@", ":********@", 1), last.ProxyEnv["HTTPS_PROXY"], host)
			assert.Equal(t, noProxy, last.ProxyEnv["NO_PROXY"], host)
		}
	})

	t.Run("idempotence", func(t *testing.T) {
		r := c.play(t, args...)
		require.NoError(t, r.err, r.output)
		assert.Equal(t, map[string]int{"node1": 0, "node2": 0, "localhost": 0}, r.changed(), r.output)
	})
}
