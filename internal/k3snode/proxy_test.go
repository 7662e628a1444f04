package k3snode

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProxyEnv(t *testing.T) {
	p := Proxy{HTTP: "http://proxy.home.arpa:3128", HTTPS: "http://u:pw@proxy.home.arpa:3128", NoProxy: "localhost,10.42.0.0/16"}
	assert.Equal(t, []string{
		"HTTP_PROXY=http://proxy.home.arpa:3128", "HTTPS_PROXY=http://u:pw@proxy.home.arpa:3128", "NO_PROXY=localhost,10.42.0.0/16",
		"http_proxy=http://proxy.home.arpa:3128", "https_proxy=http://u:pw@proxy.home.arpa:3128", "no_proxy=localhost,10.42.0.0/16",
	}, p.Env())
	assert.Equal(t, []string{"pw"}, p.Passwords())
	assert.Equal(t, []string{"pw"}, PasswordsIn("K3S_X=1\nhttps_proxy=http://u:pw@proxy:3128\nNO_PROXY=localhost\n"))
	assert.Equal(t, []string{"pw"}, PasswordsIn("HTTPS_PROXY='http://u:pw@proxy:3128'\n"), "quoted, as the install script writes it")
	assert.Empty(t, Proxy{}.Env())
	assert.Nil(t, Proxy{}.Func())
}

func TestProxyFunc(t *testing.T) {
	f := Proxy{HTTP: "http://proxy:3128", HTTPS: "http://proxy:3128", NoProxy: "localhost,10.0.0.0/8"}.Func()
	for _, tc := range []struct{ url, want string }{
		{"https://get.k3s.io/", "http://proxy:3128"},
		{"http://10.1.2.3/install.sh", ""},
		{"http://localhost:8080/", ""},
		{"http://10.1.2.3:6443/", ""},
	} {
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		require.NoError(t, err)
		got, err := f(req)
		require.NoError(t, err)
		if tc.want == "" {
			assert.Nil(t, got, tc.url)
			continue
		}
		assert.Equal(t, tc.want, got.String(), tc.url)
	}
}

func TestWithProxy(t *testing.T) {
	p := Proxy{HTTPS: "http://proxy:3128", NoProxy: "localhost"}
	for _, tc := range []struct{ name, in, want string }{
		{"none yet", "", "HTTPS_PROXY=http://proxy:3128\nNO_PROXY=localhost\nhttps_proxy=http://proxy:3128\nno_proxy=localhost\n"},
		{"the install script's lines, in its order, and another", "K3S_KUBECONFIG_MODE=644\nhttp_proxy=http://old:1\nHTTPS_PROXY=http://proxy:3128\n",
			"K3S_KUBECONFIG_MODE=644\nHTTPS_PROXY=http://proxy:3128\nNO_PROXY=localhost\nhttps_proxy=http://proxy:3128\nno_proxy=localhost\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WithProxy(tc.in, p)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, WithProxy(got, p), "idempotent")
		})
	}
	assert.Equal(t, "K3S_X=1\n", WithProxy("K3S_X=1\nNO_PROXY=a\n", Proxy{}), "no proxy: its lines go")
	assert.Equal(t, "", WithProxy("", Proxy{}))
}

func TestBypassed(t *testing.T) {
	for _, tc := range []struct {
		host, noProxy string
		want          bool
	}{
		{"get.k3s.io", "", false},
		{"get.k3s.io", "*", true},
		{"get.k3s.io", "k3s.io", true},
		{"k3s.io", "k3s.io", true},
		{"getk3s.io", "k3s.io", false},
		{"get.k3s.io", ".k3s.io", true},
		{"k3s.io", ".k3s.io", false},
		{"10.42.1.7", "localhost, 10.42.0.0/16", true},
		{"10.44.1.7", "10.42.0.0/16", false},
		{"192.168.1.10", "192.168.1.10:6443", true},
		{"Registry.Home.Arpa", ".home.arpa", true},
	} {
		assert.Equal(t, tc.want, bypassed(tc.host, tc.noProxy), "%s with %q", tc.host, tc.noProxy)
	}
}
