package bed

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Proxy is an HTTP forward proxy on the test network, with basic auth, as a
// homelab's egress proxy (Squid, say) would be: the hosts reach the k3s
// downloads only through it (Options.ProxyDownloads). It forwards to this
// machine's loopback addresses only, so nothing leaves the machine, and
// keeps each URL it was asked for.
type Proxy struct {
	// URL is the proxy's address with its credentials, as a node's
	// HTTP_PROXY would hold it.
	URL      string
	User     string
	Password string

	server *http.Server
	mu     sync.Mutex
	asked  []string
}

func startProxy(addr, user, password string) (*Proxy, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen for the proxy: %w", err)
	}
	// The password percent-encoded in the URL, as one holding @ or : must be.
	p := &Proxy{URL: fmt.Sprintf("http://%s@%s", url.UserPassword(user, password), l.Addr()), User: user, Password: password}
	p.server = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// PasswordForms are the password as the URL holds it (percent-encoded) and
// as the proxy takes it (decoded): neither may show in any output.
func (p *Proxy) PasswordForms() []string {
	encoded := strings.TrimPrefix(url.UserPassword("", p.Password).String(), ":")
	return []string{p.Password, encoded}
}

// Asked are the URLs the proxy forwarded, in order.
func (p *Proxy) Asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.asked...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.User+":"+p.Password))
	if r.Header.Get("Proxy-Authorization") != want {
		w.Header().Set("Proxy-Authenticate", `Basic realm="test bed proxy"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect || !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "the test bed proxy forwards plain http only", http.StatusNotImplemented)
		return
	}
	if ip := net.ParseIP(r.URL.Hostname()); ip == nil || !ip.IsLoopback() {
		http.Error(w, "the test bed proxy forwards to this machine's loopback only", http.StatusForbidden)
		return
	}
	p.mu.Lock()
	p.asked = append(p.asked, r.URL.String())
	p.mu.Unlock()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := (&http.Transport{Proxy: nil}).RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if !strings.EqualFold(k, "Connection") {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *Proxy) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.server.Shutdown(ctx)
}
