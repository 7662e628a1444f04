package k3snode

import (
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Proxy is the HTTP proxy k3s's install and k3s itself go through: URLs
// (which may hold a user and password) and the comma-separated NO_PROXY.
type Proxy struct {
	HTTP, HTTPS, NoProxy string
}

// Set says whether any of it is.
func (p Proxy) Set() bool { return p.HTTP != "" || p.HTTPS != "" || p.NoProxy != "" }

// Env is the environment that carries p, as variables in both cases: Go
// programs (k3s, containerd) read either; curl (the install script's
// download) reads only http_proxy for http URLs.
func (p Proxy) Env() []string {
	var out []string
	for _, v := range []struct{ name, value string }{{"HTTP_PROXY", p.HTTP}, {"HTTPS_PROXY", p.HTTPS}, {"NO_PROXY", p.NoProxy}} {
		if v.value != "" {
			out = append(out, v.name+"="+v.value)
		}
	}
	for _, v := range append([]string{}, out...) {
		name, value, _ := strings.Cut(v, "=")
		out = append(out, strings.ToLower(name)+"="+value)
	}
	return out
}

// Passwords are the passwords in p's URLs, in every form they can be
// shown (ansible.URLPasswords): secrets to mask.
func (p Proxy) Passwords() []string {
	return append(ansible.URLPasswords(p.HTTP), ansible.URLPasswords(p.HTTPS)...)
}

// PasswordsIn are the passwords in the proxy URLs of an environment
// file's content: secrets to mask when it is shown.
func PasswordsIn(content string) []string {
	var out []string
	for _, line := range strings.Split(content, "\n") {
		if proxyLine.MatchString(line) {
			_, value, _ := strings.Cut(line, "=")
			out = append(out, ansible.URLPasswords(value)...)
		}
	}
	return out
}

// Func is the proxy an HTTP client uses for p; nil when p sets none (the
// process's environment then decides, as Go's default client does). The
// URL's scheme picks the proxy, unless NoProxy names its host (NoProxy's
// rules below).
func (p Proxy) Func() func(*http.Request) (*url.URL, error) {
	if !p.Set() {
		return nil
	}
	return func(r *http.Request) (*url.URL, error) {
		raw := p.HTTP
		if r.URL.Scheme == "https" {
			raw = p.HTTPS
		}
		if raw == "" || bypassed(r.URL.Hostname(), p.NoProxy) {
			return nil, nil
		}
		return url.Parse(raw)
	}
}

// bypassed says whether NO_PROXY reaches host directly, with the rules Go
// and curl share: "*" is every host; an entry is a host (and its
// subdomains), a domain with a leading dot (its subdomains), an IP, or a
// CIDR; a port on an entry is ignored.
func bypassed(host, noProxy string) bool {
	host = strings.ToLower(host)
	ip := net.ParseIP(host)
	for _, entry := range strings.Split(noProxy, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		if h, _, err := net.SplitHostPort(entry); err == nil {
			entry = h
		}
		switch {
		case entry == "":
		case entry == "*":
			return true
		case strings.Contains(entry, "/"):
			if _, cidr, err := net.ParseCIDR(entry); err == nil && ip != nil && cidr.Contains(ip) {
				return true
			}
		case ip != nil:
			if other := net.ParseIP(entry); other != nil && other.Equal(ip) {
				return true
			}
		case strings.HasPrefix(entry, "."):
			if strings.HasSuffix(host, entry) {
				return true
			}
		case host == entry || strings.HasSuffix(host, "."+entry):
			return true
		}
	}
	return false
}

// EnvFile is the environment file of a unit as k3s's install script writes
// it (create_env_file: FILE_K3S_ENV, 0600), which the unit reads
// (EnvironmentFile=-/etc/systemd/system/<unit>.service.env).
func EnvFile(where Paths, unit string) string {
	return filepath.Join(where.UnitDir, unit+".service.env")
}

// proxyLine matches a line of an environment file that sets a proxy
// variable, in either case (the install script copies them so).
var proxyLine = regexp.MustCompile(`(?i)^(http|https|no)_proxy=`)

// WithProxy is the environment file content with its proxy lines replaced
// by p's (none when p sets none), every other line kept in its place.
func WithProxy(content string, p Proxy) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		if line != "" && !proxyLine.MatchString(line) {
			lines = append(lines, line)
		}
	}
	lines = append(lines, p.Env()...)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
