// Package k3snode reads and drives k3s on a node: the installed version,
// the state of its systemd units, the node token and admin kubeconfig, and
// the API's /readyz. The node modules (k3s_node, k3s_node_info) share it;
// it links no YAML library, as the node binaries stay small.
package k3snode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3spaths"
)

// Paths are where k3s lives on a node; the tests point them at a temporary
// directory.
type Paths struct {
	BinDir     string
	DataDir    string
	Kubeconfig string
	// NodeID holds the suffix with-node-id adds to the node name.
	NodeID string
	// UnitDir holds the units' environment files (EnvFile).
	UnitDir string
}

// DefaultPaths are k3s's own defaults.
var DefaultPaths = Paths{BinDir: k3spaths.BinDir, DataDir: k3spaths.DataDir, Kubeconfig: k3spaths.Kubeconfig, NodeID: k3spaths.NodeID, UnitDir: k3spaths.UnitDir}

// NodeID is the suffix k3s adds to the node name with with-node-id, "" when
// it made none (it does at its first start with that flag).
func NodeID(where Paths) string {
	return k3spaths.ReadNodeID(where.NodeID)
}

// With binds a node module's logic to the node it runs on, the real one
// with k3s's own paths: ansible.Main(module, k3snode.With(run)) in main.
func With(run func(context.Context, *ansible.Request, System, Paths) (*ansible.Result, error)) ansible.RunFunc {
	return func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		return run(ctx, req, Real{}, DefaultPaths)
	}
}

// Units are the two units k3s installs, by role.
var Units = map[string]string{"server": "k3s", "agent": "k3s-agent"}

// UnitState is what systemd says of a unit.
type UnitState struct {
	Loaded  bool `json:"loaded"` // LoadState=loaded: the unit file exists
	Enabled bool `json:"enabled"`
	// Active: k3s runs and said so (Type=notify's READY=1). A unit that is
	// "activating" is not: still starting (a k3s agent that cannot join
	// stays so for ever), or waiting to be restarted after k3s exited.
	Active bool `json:"active"`
	// ActiveState and SubState as systemd has them: active/running,
	// activating/start, activating/auto-restart, failed, inactive/dead.
	ActiveState string `json:"active_state"`
	SubState    string `json:"sub_state"`
	// Restarts is NRestarts: how often Restart=always restarted k3s.
	Restarts int `json:"restarts"`
}

func (u UnitState) String() string {
	enabled := "disabled"
	if u.Enabled {
		enabled = "enabled"
	}
	switch {
	case !u.Loaded:
		return "absent"
	case u.Active:
		return enabled + ", active"
	case u.ActiveState == "" || u.ActiveState == "inactive":
		return enabled + ", inactive"
	}
	return fmt.Sprintf("%s, %s (%s)", enabled, u.ActiveState, u.SubState)
}

// System is the node: commands, downloads and the API's health endpoint.
type System interface {
	// Run runs a command with extra environment and returns its combined
	// output.
	Run(ctx context.Context, env []string, name string, args ...string) (string, error)
	// Download fetches url, through proxy when it sets one.
	Download(ctx context.Context, url string, proxy Proxy) ([]byte, error)
	// Readyz asks the API on 127.0.0.1:port for /readyz with the
	// kubeconfig's credentials; nil means it answered ok.
	Readyz(ctx context.Context, kubeconfig string, port int, sans []string) error
	// Supervisor sends a request to k3s's supervisor at base as user
	// "server" with the cluster secret, trusting the server CA in caFile:
	// the status, what k3s said when it was not 200, or the error of a
	// request that got no answer.
	Supervisor(ctx context.Context, method, base, path, caFile, secret string, body []byte) (int, string, error)
}

// Version is the installed k3s version, "" when there is none.
func Version(ctx context.Context, sys System, where Paths) string {
	out, err := sys.Run(ctx, nil, filepath.Join(where.BinDir, "k3s"), "--version")
	if err != nil {
		return ""
	}
	return ParseVersion(out)
}

// ParseVersion takes v1.36.2+k3s1 from "k3s version v1.36.2+k3s1 (1a2b3c)".
func ParseVersion(out string) string {
	first, _, _ := strings.Cut(out, "\n")
	f := strings.Fields(first)
	if len(f) >= 3 && f[0] == "k3s" && f[1] == "version" {
		return f[2]
	}
	return ""
}

// Unit reads a unit's state from systemctl.
func Unit(ctx context.Context, sys System, name string) (UnitState, error) {
	out, err := sys.Run(ctx, nil, "systemctl", "show", "--property=LoadState,ActiveState,SubState,UnitFileState,NRestarts", name+".service")
	if err != nil {
		return UnitState{}, fmt.Errorf("read the state of unit %s: %w: %s", name, err, LastLines(out, 3))
	}
	props := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			props[k] = v
		}
	}
	restarts, _ := strconv.Atoi(props["NRestarts"])
	return UnitState{
		Loaded:      props["LoadState"] == "loaded",
		Enabled:     props["UnitFileState"] == "enabled",
		Active:      props["ActiveState"] == "active" || props["ActiveState"] == "reloading",
		ActiveState: props["ActiveState"],
		SubState:    props["SubState"],
		Restarts:    restarts,
	}, nil
}

// BootstrapTokenPath is where a server keeps the token its datastore was
// bootstrapped with (k3s's pkg/cluster/storage.go, readTokenFromFile).
func BootstrapTokenPath(where Paths) string {
	return filepath.Join(where.DataDir, "server", "token")
}

// ClusterSecret is a token's password: after "K10<hash>::<user>:" in the
// full form, else the token itself.
func ClusterSecret(token string) string {
	if rest, ok := strings.CutPrefix(token, "K10"); ok {
		if _, creds, ok := strings.Cut(rest, "::"); ok {
			if _, password, ok := strings.Cut(creds, ":"); ok {
				return password
			}
		}
	}
	return token
}

// TokenPath is where a server keeps the token other nodes join with.
func TokenPath(where Paths) string {
	return filepath.Join(where.DataDir, "server", "node-token")
}

// Token reads the node token; the error names the file and the cause, never
// content.
func Token(where Paths) (string, error) {
	path := TokenPath(where)
	raw, err := readSecretFile(path)
	if err != nil {
		return "", fmt.Errorf("read the node token %s: %w", path, err)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return "", fmt.Errorf("read the node token %s: the file is empty", path)
	}
	return token, nil
}

// Kubeconfig reads the admin kubeconfig a server wrote.
func Kubeconfig(where Paths) (string, error) {
	raw, err := readSecretFile(where.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("read the kubeconfig %s: %w", where.Kubeconfig, err)
	}
	return string(raw), nil
}

// readSecretFile reads a file that holds a secret; the error names only the
// cause (the caller names the file).
func readSecretFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	return raw, nil
}

// LastLines keeps the end of a command's output for a message.
func LastLines(out string, n int) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Real is the node itself.
type Real struct{}

func (Real) Run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (Real) Download(ctx context.Context, url string, proxy Proxy) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("install_script_url %q: %w", url, err)
	}
	client := http.DefaultClient
	if f := proxy.Func(); f != nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.Proxy = f
		client = &http.Client{Transport: transport}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return body, nil
}

func (Real) Readyz(ctx context.Context, kubeconfig string, port int, sans []string) error {
	creds, err := readKubeconfigCredentials(kubeconfig)
	if err != nil {
		return err
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	if !tlsConfig.RootCAs.AppendCertsFromPEM(creds.ca) {
		return fmt.Errorf("%s: no CA certificate in certificate-authority-data", kubeconfig)
	}
	if creds.cert != nil {
		pair, err := tls.X509KeyPair(creds.cert, creds.key)
		if err != nil {
			return fmt.Errorf("%s: client certificate: %w", kubeconfig, err)
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil}}
	// Where k3s listens, as it wrote it into the kubeconfig: its
	// bind-address when set (it then does not listen on the loopback), and
	// its https-listen-port (pkg/server/server.go, writeKubeConfig).
	base := creds.server
	if base == "" {
		base = "https://127.0.0.1:" + strconv.Itoa(port)
	}
	url := strings.TrimSuffix(base, "/") + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, LastLines(string(body), 3))
	}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		if missing := MissingSANs(resp.TLS.PeerCertificates[0], sans); len(missing) > 0 {
			return fmt.Errorf("the certificate k3s serves does not hold %s yet (its tls-san: k3s adds them to the certificate shortly after it starts)", strings.Join(missing, ", "))
		}
	}
	return nil
}

// MissingSANs are the names and addresses of sans that the certificate
// holds neither as a DNS name nor as an IP address.
func MissingSANs(cert *x509.Certificate, sans []string) []string {
	var missing []string
	for _, san := range sans {
		if ip := net.ParseIP(san); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				missing = append(missing, san)
			}
		} else if !slices.Contains(cert.DNSNames, san) {
			missing = append(missing, san)
		}
	}
	return missing
}

type credentials struct {
	ca, cert, key []byte
	server        string
}

// readKubeconfigCredentials reads the CA and client certificate of the
// kubeconfig k3s writes (one cluster, one user, *-data fields) by line: the
// node binary links no YAML library.
func readKubeconfigCredentials(path string) (credentials, error) {
	raw, err := readSecretFile(path)
	if err != nil {
		return credentials{}, fmt.Errorf("read %s: %w", path, err)
	}
	var c credentials
	fields := map[string]*[]byte{"certificate-authority-data": &c.ca, "client-certificate-data": &c.cert, "client-key-data": &c.key}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && key == "server" && c.server == "" {
			c.server = strings.Trim(strings.TrimSpace(value), `"'`)
			continue
		}
		dest, wanted := fields[key]
		if !ok || !wanted || *dest != nil {
			continue
		}
		decoded, err := base64.StdEncoding.DecodeString(strings.Trim(strings.TrimSpace(value), `"'`))
		if err != nil {
			return credentials{}, fmt.Errorf("%s: %s is not base64", path, key)
		}
		*dest = decoded
	}
	if c.ca == nil {
		return credentials{}, fmt.Errorf("%s: no certificate-authority-data", path)
	}
	if (c.cert == nil) != (c.key == nil) {
		return credentials{}, fmt.Errorf("%s: a client certificate without its key, or a key without its certificate", path)
	}
	return c, nil
}

// K3sShaped tells whether dir is one k3s makes, which a module may remove
// or change (k3s_node state=absent, k3s_etcd_restore): an absolute path
// whose last element has k3s in its name (/etc/rancher/k3s, /var/lib/rancher/k3s, a data-dir such as
// /mnt/ssd/k3s), never a home directory. A kubeconfig_path or
// data_dir set to ~/.kube/config or /home/pi would otherwise remove the
// user's home, .ssh and all. A symlink is removed, not what it points to.
func K3sShaped(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	dir = filepath.Clean(dir)
	base := strings.ToLower(filepath.Base(dir))
	if dir == "/" || dir == "/root" || filepath.Dir(dir) == "/home" {
		return false
	}
	return strings.Contains(base, "k3s")
}

// RestoreMark is the file a failed etcd restore leaves on the server it ran
// on (k3s_etcd_restore), and removes once a restore succeeds: while it is
// there, k3s_node does not start k3s, which would start a new, empty
// cluster from the etcd data k3s moved aside. Under the data dir, so that a
// reset (which removes the data dir) takes it too.
func RestoreMark(dataDir string) string {
	return filepath.Join(dataDir, "server", "db", "gitops.k3s_flux-restore-pending")
}
