package k3snode

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

func TestSupervisor(t *testing.T) {
	const secret = "cluster-secret-5151"
	var got struct{ method, path, body string }
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != "server" || pass != secret {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		got.method, got.path, got.body = r.Method, r.URL.Path, string(body)
		switch r.URL.Path {
		case "/v1-k3s/fails":
			// k3s's errors may quote what it was sent; never returned.
			http.Error(w, "token "+secret+" refused: etcd timed out", http.StatusInternalServerError)
		case EncryptionStatusPath:
			_, _ = w.Write([]byte(`{"stage":"start","activekey":"AES-CBC aescbckey","enable":true,"hashmatch":true}`))
		case "/v1-k3s/slow":
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "server-ca.crt")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	ctx := context.Background()

	status, said, err := Real{}.Supervisor(ctx, http.MethodPut, srv.URL, TokenRotatePath, ca, secret, RotateTokenBody("new-one"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Empty(t, said)
	assert.Equal(t, "PUT", got.method)
	assert.Equal(t, "/v1-k3s/token", got.path)
	assert.JSONEq(t, `{"newToken":"new-one"}`, got.body, "what k3s token rotate sends")

	status, said, err = Real{}.Supervisor(ctx, http.MethodGet, srv.URL, TokenCheckPath, ca, "a-guess", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "Unauthorized", said)

	status, said, err = Real{}.Supervisor(ctx, http.MethodGet, srv.URL, "/v1-k3s/fails", ca, secret, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Equal(t, "token <redacted> refused: etcd timed out", said)

	status, said, err = Real{}.Supervisor(ctx, http.MethodGet, srv.URL, EncryptionStatusPath, ca, secret, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"stage":"start","activekey":"AES-CBC aescbckey","enable":true,"hashmatch":true}`, said, "the answer, to read")

	// The caller's deadline, not the default 30 s.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, _, err = Real{}.Supervisor(short, http.MethodPut, srv.URL, "/v1-k3s/slow", ca, secret, RotateKeysBody())
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	// Only the cluster's CA is trusted.
	other := filepath.Join(dir, "other-ca.crt")
	otherCA, err := pki.SelfSigned("another-ca", time.Now().AddDate(1, 0, 0))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, otherCA, 0o600))
	_, _, err = Real{}.Supervisor(ctx, http.MethodGet, srv.URL, TokenCheckPath, other, secret, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
	assert.NotContains(t, err.Error(), secret)

	_, _, err = Real{}.Supervisor(ctx, http.MethodGet, srv.URL, TokenCheckPath, filepath.Join(dir, "missing.crt"), secret, nil)
	assert.ErrorContains(t, err, "read the server CA "+filepath.Join(dir, "missing.crt"))
}

func TestStoredClusterSecret(t *testing.T) {
	where := Paths{DataDir: t.TempDir()}
	got, err := StoredClusterSecret(where)
	require.NoError(t, err)
	assert.Empty(t, got, "never bootstrapped")
	require.NoError(t, os.MkdirAll(filepath.Join(where.DataDir, "server"), 0o700))
	require.NoError(t, os.WriteFile(BootstrapTokenPath(where), []byte("K10abc::server:pw-77\n"), 0o600))
	got, err = StoredClusterSecret(where)
	require.NoError(t, err)
	assert.Equal(t, "pw-77", got)
}

func TestLocalAPI(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "k3s.yaml")
	assert.Equal(t, "https://127.0.0.1:6444", LocalAPI(kc, 6444), "no kubeconfig: the loopback")
	require.NoError(t, os.WriteFile(kc, []byte("clusters:\n- cluster:\n    certificate-authority-data: Y2E=\n    server: https://10.0.0.5:6443\n"), 0o600))
	assert.Equal(t, "https://10.0.0.5:6443", LocalAPI(kc, 6444), "where k3s wrote it listens")
}
