package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

// supervisorSNI is the TLS server name the stand-in agent uses to reach
// the server's supervisor endpoints on the same port as the API server,
// as k3s serves both on 6443.
const supervisorSNI = "k3s-supervisor"

func runServer(s settings, bed bedInfo) error {
	if s.bool("cluster-reset") {
		return clusterReset(s, bed)
	}
	// A server joining an HA cluster checks the first server as an agent does;
	// one whose etcd is initialised already skips it, the server unreachable
	// or not (pkg/cluster/bootstrap.go, shouldBootstrapLoad: a cold restart of
	// the whole cluster must not depend on it).
	if _, err := os.Stat(etcdWALDir(s.str("data-dir", defaultDataDir))); s.str("server", "") != "" && err != nil {
		if err := joinCluster(s); err != nil {
			return err
		}
	}
	ca, err := pki.LoadCA(bed.PKIDir)
	if err != nil {
		return err
	}
	dataDir := s.str("data-dir", defaultDataDir)
	token, err := serverToken(s, dataDir, ca)
	if err != nil {
		return err
	}
	name, addr, err := nodeIdentity(s)
	if err != nil {
		return err
	}
	if err := addServingSANs(bed.PKIDir, ca, append([]string{name, addr, bindAddressOrLoopback(s)}, s["tls-san"]...), strings.TrimPrefix(bed.APIServer, "https://")); err != nil {
		return fmt.Errorf("update serving certificate: %w", err)
	}
	if err := writeKubeconfig(s, bed, ca); err != nil {
		return err
	}
	tlsDir := filepath.Join(dataDir, "server", "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tlsDir, "server-ca.crt"), ca.CertPEM, 0o644); err != nil {
		return err
	}
	// etcd first, as k3s starts it before the API server: a failed join
	// leaves the server down.
	if etcdMember(s) {
		client, err := apiClient(bed)
		if err != nil {
			return err
		}
		member, fresh, err := memberName(dataDir, name)
		if err != nil {
			return err
		}
		if err := joinEtcd(client, s, name, member, addr, fresh); err != nil {
			return err
		}
		if err := initEtcdDataDir(dataDir); err != nil {
			return err
		}
		peer, err := listenPeer(addr)
		if err != nil {
			return fmt.Errorf("etcd peer listener: %w", err)
		}
		defer peer.Close()
		go removeDeletedMembers(client)
	}
	port := s.str("https-listen-port", "6443")
	sup, err := supervisorTLS(ca, token, bed)
	if err != nil {
		return err
	}
	upstream := strings.TrimPrefix(bed.APIServer, "https://")
	var listeners []net.Listener
	for i, host := range listenHosts(s, addr) {
		l, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil && i > 0 {
			continue // a loopback k3s cannot listen on is skipped (util.ListenWithLoopback)
		}
		if err != nil {
			return fmt.Errorf("listen on %s:%s: %w", host, port, err)
		}
		listeners = append(listeners, l)
		go serveProxy(l, upstream, sup)
	}
	if err := registerNode(s, bed, "server", name, addr); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "k3s stand-in server %s running; API server at %s\n", name, strings.Join(listenURLs(listeners), " and "))
	notifyReady()
	waitForSignal()
	for _, l := range listeners {
		_ = l.Close()
	}
	return nil
}

func waitForSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// serverToken returns the cluster secret: the token flag or token-file,
// else the one stored on an earlier start, else a new one. It writes
// server/token and server/node-token as k3s does, the node-token in the
// full "K10<sha256 of the CA>::server:<secret>" form.
func serverToken(s settings, dataDir string, ca *pki.CA) (string, error) {
	dir := filepath.Join(dataDir, "server")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	token := s.str("token", "")
	if f := s.str("token-file", ""); token == "" && f != "" {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read token-file: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	stored := ""
	if raw, err := os.ReadFile(filepath.Join(dir, "token")); err == nil {
		stored = strings.TrimSpace(string(raw))
	}
	// The datastore was bootstrapped with the stored token's secret: another
	// one is refused at start, as k3s's pkg/cluster/storage.go,
	// getBootstrapKeyFromStorage (tokens normalised as its normalizeToken).
	if token != "" && stored != "" && secretOf(token) != secretOf(stored) {
		return "", errors.New("starting kubernetes: preparing server: failed to bootstrap cluster data: bootstrap data already found and encrypted with different token")
	}
	if token == "" {
		token = stored
	}
	if token == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		token = hex.EncodeToString(b)
	}
	secret := secretOf(token)
	full := "K10" + caHash(ca.CertPEM) + "::server:" + secret
	for _, f := range []string{"token", "node-token"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(full+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return secret, nil
}

// secretOf is a token's password (normalizeToken): the whole token unless
// it has the full form.
func secretOf(token string) string {
	if _, pass, full := parseFullToken(token); full {
		return pass
	}
	return token
}

// parseFullToken splits "K10<hash>::<user>:<password>".
func parseFullToken(token string) (hash, password string, ok bool) {
	rest, found := strings.CutPrefix(token, "K10")
	if !found {
		return "", "", false
	}
	hash, creds, found := strings.Cut(rest, "::")
	if !found {
		return "", "", false
	}
	_, password, found = strings.Cut(creds, ":")
	return hash, password, found
}

func caHash(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:])
}

// addServingSANs re-issues the API server's serving certificate when it
// lacks one of names (kube-apiserver reloads it from disk). A lock file
// keeps several servers from racing.
func addServingSANs(pkiDir string, ca *pki.CA, names []string, upstream string) error {
	lock, err := os.OpenFile(filepath.Join(pkiDir, "serving.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(pkiDir, pki.ServingCertFile))
	if err != nil {
		return err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return errors.New("serving certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	dns, ips := cert.DNSNames, cert.IPAddresses
	missing := false
	for _, n := range names {
		if n == "" {
			continue
		}
		if ip := net.ParseIP(n); ip != nil {
			if !containsIP(ips, ip) {
				ips, missing = append(ips, ip), true
			}
		} else if !contains(dns, n) {
			dns, missing = append(dns, n), true
		}
	}
	if !missing {
		return nil
	}
	if err := pki.WriteServingCert(pkiDir, ca, dns, ips); err != nil {
		return err
	}
	// kube-apiserver notices the new files within a second or so; wait
	// until it serves the new certificate so clients can rely on it.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if servesNames(upstream, dns) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("kube-apiserver did not load the new serving certificate within 30s")
}

// servesNames tells whether the API server's current certificate covers
// every DNS name.
func servesNames(upstream string, dns []string) bool {
	conn, err := tls.Dial("tcp", upstream, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the certificate
	if err != nil {
		return false
	}
	defer conn.Close()
	served := conn.ConnectionState().PeerCertificates[0].DNSNames
	for _, n := range dns {
		if !contains(served, n) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsIP(list []net.IP, ip net.IP) bool {
	for _, x := range list {
		if x.Equal(ip) {
			return true
		}
	}
	return false
}

// bindAddressOrLoopback is the address k3s puts into k3s.yaml: its
// bind-address when set, else the loopback (pkg/daemons/config/types.go,
// BindAddressOrLoopback, used by pkg/server/server.go, writeKubeConfig).
func bindAddressOrLoopback(s settings) string {
	if b := s.str("bind-address", ""); b != "" && b != "0.0.0.0" && b != "::" {
		return b
	}
	return "127.0.0.1"
}

// listenHosts are where the supervisor port listens: the bind-address alone
// when one is set (k3s then does not listen on the loopback), else every
// address of the host (bind-address's default, 0.0.0.0): the loopback, the
// node's address and any other the host has, such as kube-vip's address.
func listenHosts(s settings, _ string) []string {
	// With bind-address k3s listens there and on the loopbacks too
	// (pkg/cluster/https.go, newListener: util.ListenWithLoopback).
	if b := bindAddressOrLoopback(s); b != "127.0.0.1" {
		return []string{b, "127.0.0.1", "::1"}
	}
	return []string{""}
}

// writeKubeconfig writes /etc/rancher/k3s/k3s.yaml (or write-kubeconfig)
// as k3s does: server https://<bind-address or 127.0.0.1>:<port>, names "default", an admin
// client certificate, mode write-kubeconfig-mode (default 0600).
func writeKubeconfig(s settings, bed bedInfo, ca *pki.CA) error {
	path := s.str("write-kubeconfig", "/etc/rancher/k3s/k3s.yaml")
	mode := os.FileMode(0o600)
	if m := s.str("write-kubeconfig-mode", ""); m != "" {
		n, err := strconv.ParseUint(m, 8, 32)
		if err != nil {
			return fmt.Errorf("invalid write-kubeconfig-mode %q: %w", m, err)
		}
		mode = os.FileMode(n)
	}
	cert, key, err := adminCertificate(s.str("data-dir", defaultDataDir), ca)
	if err != nil {
		return err
	}
	server := "https://" + net.JoinHostPort(bindAddressOrLoopback(s), s.str("https-listen-port", "6443"))
	content := kubeconfig(server, pki.B64(ca.CertPEM), pki.B64(cert), pki.B64(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// adminCertificate is the admin client certificate and key, issued once and
// kept under server/tls as k3s keeps client-admin.crt: a restart (an upgrade)
// writes the same kubeconfig again.
func adminCertificate(dataDir string, ca *pki.CA) (cert, key []byte, err error) {
	dir := filepath.Join(dataDir, "server", "tls")
	certPath, keyPath := filepath.Join(dir, "client-admin.crt"), filepath.Join(dir, "client-admin.key")
	cert, certErr := os.ReadFile(certPath)
	key, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		return cert, key, nil
	}
	if cert, key, err = ca.Issue("system:admin", []string{"system:masters"}, nil, nil); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(certPath, cert, 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, os.WriteFile(keyPath, key, 0o600)
}

func kubeconfig(server, ca, cert, key string) string {
	return fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: %s
    client-key-data: %s
`, ca, server, cert, key)
}

// supervisorTLS serves the supervisor endpoints an agent joins through:
// /cacerts (the CA, fetched before the agent trusts the server) and
// /v1-k3s/join (200 with the right token, 401 otherwise) and
// /v1-k3s/serving-kubelet.crt (the node password's check, nodepassword.go).
func supervisorTLS(ca *pki.CA, token string, bed bedInfo) (*tls.Config, error) {
	certPEM, keyPEM, err := ca.Issue(supervisorSNI, nil, []string{supervisorSNI}, nil)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/cacerts", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ca.CertPEM) })
	mux.HandleFunc("/v1-k3s/join", func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(token)) != 1 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"api_server": bed.APIServer})
	})
	mux.HandleFunc("/v1-k3s/serving-kubelet.crt", servingKubeletCert(token, bed))
	supervisorHandler = mux
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

var supervisorHandler http.Handler

// serveProxy accepts connections: those whose TLS ClientHello names the
// supervisor are served here; all others are passed through, unopened, to
// the real kube-apiserver, so client certificates work end to end.
func serveProxy(l net.Listener, upstream string, sup *tls.Config) {
	single := &singleConnListener{conns: make(chan net.Conn), addr: l.Addr()}
	go func() { _ = http.Serve(tls.NewListener(single, sup), supervisorHandler) }()
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			sni, replay, err := peekSNI(conn)
			if err != nil {
				_ = conn.Close()
				return
			}
			if sni == supervisorSNI {
				single.conns <- replay
				return
			}
			pipeTo(replay, upstream)
		}()
	}
}

// peekSNI reads the ClientHello and returns the server name it asks for,
// and a connection that replays what was read.
func peekSNI(conn net.Conn) (string, net.Conn, error) {
	rec := &recordingConn{Conn: conn}
	var sni string
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_ = tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni = h.ServerName
		return nil, errPeeked
	}}).Handshake()
	_ = conn.SetReadDeadline(time.Time{})
	if rec.buf.Len() == 0 {
		return "", nil, errors.New("no ClientHello")
	}
	return sni, &replayConn{Conn: conn, r: io.MultiReader(bytes.NewReader(rec.buf.Bytes()), conn)}, nil
}

var errPeeked = errors.New("peeked")

// recordingConn keeps what is read and swallows writes (the alert the
// aborted handshake would send).
type recordingConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.buf.Write(p[:n])
	return n, err
}

func (c *recordingConn) Write(p []byte) (int, error) { return len(p), nil }

type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func pipeTo(conn net.Conn, upstream string) {
	defer conn.Close()
	up, err := net.DialTimeout("tcp", upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(up, conn); closeWrite(up) }()
	go func() { defer wg.Done(); _, _ = io.Copy(conn, up); closeWrite(conn) }()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
}

func listenURLs(ls []net.Listener) []string {
	var out []string
	for _, l := range ls {
		out = append(out, "https://"+l.Addr().String())
	}
	return out
}

// singleConnListener hands connections to http.Serve one at a time.
type singleConnListener struct {
	conns chan net.Conn
	addr  net.Addr
}

func (l *singleConnListener) Accept() (net.Conn, error) { return <-l.conns, nil }
func (l *singleConnListener) Close() error              { return nil }
func (l *singleConnListener) Addr() net.Addr            { return l.addr }
