package k3snode

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ServerCAPath is the certificate authority of what k3s's servers serve
// (the API and the supervisor on the same port), the same on every server.
func ServerCAPath(where Paths) string {
	return filepath.Join(where.DataDir, "server", "tls", "server-ca.crt")
}

// StoredClusterSecret is the password of the token the server's datastore
// was bootstrapped with (BootstrapTokenPath, as ClusterSecret takes it), ""
// on a server never bootstrapped. The error names the file and the cause,
// never content.
func StoredClusterSecret(where Paths) (string, error) {
	raw, err := readSecretFile(BootstrapTokenPath(where))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the bootstrap token %s: %w", BootstrapTokenPath(where), err)
	}
	return ClusterSecret(strings.TrimSpace(string(raw))), nil
}

// TokenRotatePath is where k3s's supervisor rotates the cluster token: what
// `k3s token rotate` asks (pkg/cli/token/token.go, Rotate; served by
// pkg/server/handlers/token.go, TokenRequest), as user "server" with the
// current token's password, a JSON body {"newToken": ...}.
const TokenRotatePath = "/v1-k3s/token"

// TokenCheckPath answers only a request as user "server" with the cluster's
// current token (pkg/server/handlers/router.go: serverAuthed), and holds no
// secret: the encryption status.
const TokenCheckPath = "/v1-k3s/encrypt/status"

// RotateTokenBody is the request `k3s token rotate --new-token` sends.
func RotateTokenBody(newSecret string) []byte {
	body, _ := json.Marshal(map[string]string{"newToken": newSecret})
	return body
}

// Supervisor sends a request to k3s's supervisor at base (https://host:port)
// as user "server" with the cluster secret, trusting only the server CA in
// caFile, within ctx's deadline (30 s where ctx has none). It returns the
// status and what k3s said: with 200 the answer (EncryptionStatusPath's
// JSON), otherwise the end of its error text (which names no secret); err
// is for a request that got no answer. The secret never appears in what it
// returns.
func (Real) Supervisor(ctx context.Context, method, base, path, caFile, secret string, body []byte) (int, string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return 0, "", fmt.Errorf("read the server CA %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return 0, "", fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, Proxy: nil}}
	url := strings.TrimSuffix(base, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.SetBasicAuth("server", secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	said, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, strings.ReplaceAll(string(said), secret, "<redacted>"), nil
	}
	return resp.StatusCode, strings.ReplaceAll(LastLines(string(said), 3), secret, "<redacted>"), nil
}

// LocalAPI is where the server's k3s listens, as it wrote it into its admin
// kubeconfig (its bind-address and https-listen-port), else the loopback on
// port.
func LocalAPI(kubeconfig string, port int) string {
	if c, err := readKubeconfigCredentials(kubeconfig); err == nil && c.server != "" {
		return c.server
	}
	return "https://127.0.0.1:" + strconv.Itoa(port)
}
