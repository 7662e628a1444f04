package k3snode

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const script = "#!/bin/sh\necho installing\n"

func TestReadyz(t *testing.T) {
	healthy := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !healthy {
			http.Error(w, "[-]etcd failed: reason withheld", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	_, portText, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	port, _ := strconv.Atoi(portText)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kubeconfig := filepath.Join(t.TempDir(), "k3s.yaml")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: "+
		base64.StdEncoding.EncodeToString(ca)+"\n    server: "+srv.URL+"\n  name: default\n"), 0o600))

	// The address and port k3s wrote into its kubeconfig are asked (its
	// bind-address and https-listen-port), not api_port on the loopback.
	err = Real{}.Readyz(context.Background(), kubeconfig, 1, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "500 Internal Server Error: [-]etcd failed")
	healthy = true
	assert.NoError(t, Real{}.Readyz(context.Background(), kubeconfig, 1, nil))
	// Ready also means serving a certificate that holds the config's tls-san (httptest's holds
	// example.com and the loopbacks).
	assert.NoError(t, Real{}.Readyz(context.Background(), kubeconfig, 1, []string{"example.com", "127.0.0.1", "::1"}))
	assert.EqualError(t, Real{}.Readyz(context.Background(), kubeconfig, 1, []string{"example.com", "k3s-api.home.arpa", "10.0.0.9"}),
		"the certificate k3s serves does not hold k3s-api.home.arpa, 10.0.0.9 yet (its tls-san: k3s adds them to the certificate shortly after it starts)")
	// A kubeconfig without a server: the loopback at api_port.
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: "+
		base64.StdEncoding.EncodeToString(ca)+"\n  name: default\n"), 0o600))
	assert.NoError(t, Real{}.Readyz(context.Background(), kubeconfig, port, nil))

	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\n"), 0o600))
	assert.EqualError(t, Real{}.Readyz(context.Background(), kubeconfig, port, nil), kubeconfig+": no certificate-authority-data")
	assert.ErrorContains(t, Real{}.Readyz(context.Background(), kubeconfig+".missing", port, nil), "no such file or directory")
}

func TestDownloadAndRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/install.sh" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, script)
	}))
	defer srv.Close()
	body, err := Real{}.Download(context.Background(), srv.URL+"/install.sh", Proxy{})
	require.NoError(t, err)
	assert.Equal(t, script, string(body))
	_, err = Real{}.Download(context.Background(), srv.URL+"/other.sh", Proxy{})
	assert.EqualError(t, err, "GET "+srv.URL+"/other.sh: 404 Not Found")

	// Through a proxy, which is asked for the whole URL (and answers it here, so nothing
	// leaves the machine).
	var asked []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.String())
		fmt.Fprint(w, script)
	}))
	defer proxy.Close()
	body, err = Real{}.Download(context.Background(), "http://get.k3s.invalid/install.sh", Proxy{HTTP: proxy.URL})
	require.NoError(t, err)
	assert.Equal(t, script, string(body))
	assert.Equal(t, []string{"http://get.k3s.invalid/install.sh"}, asked)

	out, err := Real{}.Run(context.Background(), []string{"K3S_TEST=42"}, "sh", "-c", "echo $K3S_TEST; echo err >&2")
	require.NoError(t, err)
	assert.Equal(t, "42\nerr\n", out)
}

func TestReadNode(t *testing.T) {
	assert.Equal(t, "v1.36.2+k3s1", ParseVersion("k3s version v1.36.2+k3s1 (abc)\ngo version go1.26\n"))
	assert.Equal(t, "", ParseVersion("bash: k3s: command not found"))

	where := Paths{DataDir: t.TempDir(), Kubeconfig: filepath.Join(t.TempDir(), "k3s.yaml")}
	_, err := Token(where)
	assert.EqualError(t, err, "read the node token "+TokenPath(where)+": no such file or directory")
	require.NoError(t, os.MkdirAll(filepath.Dir(TokenPath(where)), 0o700))
	require.NoError(t, os.WriteFile(TokenPath(where), []byte(" \n"), 0o600))
	_, err = Token(where)
	assert.EqualError(t, err, "read the node token "+TokenPath(where)+": the file is empty")
	require.NoError(t, os.WriteFile(TokenPath(where), []byte("K10abc::server:s3cret\n"), 0o600))
	token, err := Token(where)
	require.NoError(t, err)
	assert.Equal(t, "K10abc::server:s3cret", token)
	_, err = Kubeconfig(where)
	assert.EqualError(t, err, "read the kubeconfig "+where.Kubeconfig+": no such file or directory")

	assert.Equal(t, "absent", UnitState{}.String())
	assert.Equal(t, "enabled, active", UnitState{Loaded: true, Enabled: true, Active: true}.String())
	assert.Equal(t, "disabled, active", UnitState{Loaded: true, Active: true}.String())
	assert.Equal(t, "enabled, inactive", UnitState{Loaded: true, Enabled: true}.String())
	assert.Equal(t, "disabled, inactive", UnitState{Loaded: true}.String())
	assert.Equal(t, "a | b", LastLines("x\na\nb\n", 2))
}
