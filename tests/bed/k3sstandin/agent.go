package main

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

var randReader = rand.Reader

// joinCluster joins the server named by the server flag with the token,
// as k3s agent and a joining k3s server do: fetch the server's CA without
// trusting it, check it against the token's CA hash (full K10 tokens),
// then authenticate with the token. A missing or malformed setting is an
// error at once (k3s's CLI checks); validateJoin is the part k3s retries.
func joinCluster(s settings) error {
	server, token, err := joinSettings(s)
	if err != nil {
		return err
	}
	_, err = validateJoin(server, token)
	return err
}

// joinSettings are the server URL and the token, as k3s's CLI requires them.
func joinSettings(s settings) (server, token string, err error) {
	server = s.str("server", os.Getenv("K3S_URL"))
	if server == "" {
		return "", "", errors.New("--server is required")
	}
	token = s.str("token", os.Getenv("K3S_TOKEN"))
	if f := s.str("token-file", ""); token == "" && f != "" {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", "", fmt.Errorf("read token-file: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if token == "" {
		return "", "", errors.New("--token is required")
	}
	if u, err := url.Parse(server); err != nil || u.Scheme != "https" {
		return "", "", fmt.Errorf("invalid server url %q", server)
	}
	return server, token, nil
}

// joined is a validated connection to a server: a client trusting its CA,
// and the token's password.
type joined struct {
	server, password string
	client           *http.Client
}

// validateJoin fetches the server's CA, checks it against the token and
// authenticates with the token.
func validateJoin(server, token string) (joined, error) {
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{ServerName: supervisorSNI, InsecureSkipVerify: true}, //nolint:gosec // as k3s: verified by the token's hash next
	}}
	resp, err := insecure.Get(server + "/cacerts")
	if err != nil {
		return joined{}, fmt.Errorf("failed to get CA certs: %w", err)
	}
	caPEM, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	password := token
	if hash, pass, full := parseFullToken(token); full {
		if got := caHash(caPEM); got != hash {
			return joined{}, fmt.Errorf("token CA hash does not match the Cluster CA certificate hash: %s != %s", hash, got)
		}
		password = pass
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	trusted := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{ServerName: supervisorSNI, RootCAs: pool},
	}}
	req, _ := http.NewRequest("GET", server+"/v1-k3s/join", nil)
	req.SetBasicAuth("node", password)
	resp, err = trusted.Do(req)
	if err != nil {
		return joined{}, fmt.Errorf("failed to validate connection to cluster at %s: %w", server, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return joined{}, fmt.Errorf("failed to validate connection to cluster at %s: %s (wrong token?)", server, resp.Status)
	}
	return joined{server: server, password: password, client: trusted}, nil
}

// runAgent joins, registers the Node and runs until stopped. Like k3s
// (pkg/agent/run.go, createProxyAndValidateToken), an agent that cannot
// validate its connection to the cluster (server unreachable, CA hash or
// token wrong) logs it and tries again every 2 s, for ever: it never
// reports ready, so a blocking `systemctl start` never returns.
func runAgent(s settings, bed bedInfo) error {
	server, token, err := joinSettings(s)
	if err != nil {
		return err
	}
	var j joined
	for {
		if j, err = validateJoin(server, token); err == nil {
			break
		}
		fmt.Fprintf(os.Stderr, "time=%q level=error msg=%q\n", time.Now().Format(time.RFC3339), fmt.Sprintf("Failed to validate connection to cluster at %s: %v", server, err))
		time.Sleep(2 * time.Second)
	}
	name, err := nodeName(s)
	if err != nil {
		return err
	}
	// The kubelet's certificates, asked for with the node password
	// (nodepassword.go): refused, k3s asks again every 5 s, for ever.
	for {
		if err = requestServingCert(j, name); err == nil {
			break
		}
		fmt.Fprintf(os.Stderr, "time=%q level=info msg=%q\n", time.Now().Format(time.RFC3339), "Waiting to retrieve agent configuration; server is not ready: "+err.Error())
		time.Sleep(nodePasswordRetry)
	}
	addr, err := nodeAddress(s)
	if err != nil {
		return err
	}
	if err := registerNode(s, bed, "agent", name, addr); err != nil {
		return err
	}
	client, err := apiClient(bed)
	if err != nil {
		return err
	}
	if err := ownNodePassword(client, name); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "k3s stand-in agent %s joined %s\n", name, s.str("server", os.Getenv("K3S_URL")))
	notifyReady()
	waitForSignal()
	return nil
}
