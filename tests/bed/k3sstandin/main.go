// Command k3s is the test bed's stand-in for the k3s binary, which cannot
// run here (no systemd, no container runtime). It is installed the way the
// real installer installs k3s (install.sh) and behaves as k3s does where
// this collection can see it:
//
//   - `k3s server` / `k3s agent` read /etc/rancher/k3s/config.yaml and its
//     config.yaml.d drop-ins with k3s's rules (drop-ins in order, "key+"
//     appends; a server warns about and drops unknown keys, an agent fails
//     on them) and record each invocation;
//   - a server writes the node-token and /etc/rancher/k3s/k3s.yaml
//     (server https://127.0.0.1:6443), adds its addresses and tls-san to
//     the API server's serving certificate, and makes the test bed's real
//     kube-apiserver answer on 127.0.0.1:6443 and <its address>:6443;
//   - an agent joins only with the right token and a reachable server;
//   - both register their Node with the names, labels, taints and
//     addresses from their config; kwok then plays the kubelet.
//
// `k3s --version` prints the version install.sh was asked to install, and
// the Node reports it as its kubelet version; a drain of the Node evicts
// the Pods kwok runs there through the real API server. A server that runs
// etcd is a member of the modelled member list until its Node is deleted
// (etcd.go).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// bedFile is set at build time (-X main.bedFile=...): the test bed's
// description of its API server and CA.
var bedFile = "/etc/k3s-standin/bed.json"

// bedInfo is what the stand-in needs from the test bed.
type bedInfo struct {
	APIServer string `json:"api_server"` // https://<bridge>:6443
	PKIDir    string `json:"pki_dir"`
}

const (
	defaultConfig  = "/etc/rancher/k3s/config.yaml"
	defaultDataDir = "/var/lib/rancher/k3s"
	standinDir     = "/var/lib/rancher/k3s/standin"
	defaultVersion = "v1.36.2+k3s1"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		// k3s logs fatal errors this way before exiting 1.
		fmt.Fprintf(os.Stderr, "time=%q level=fatal msg=%q\n", time.Now().Format(time.RFC3339), "Error: "+err.Error())
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: k3s server|agent [flags] | --version")
	}
	switch args[0] {
	case "--version", "-v", "version":
		fmt.Printf("k3s version %s (standin)\ngo version go1.26\n", installedVersion())
		return nil
	case "server", "agent":
	case "etcd-snapshot":
		return runEtcdSnapshot(args[1:])
	default:
		return fmt.Errorf("the k3s stand-in supports server, agent, etcd-snapshot and --version, not %q", args[0])
	}
	role := args[0]
	entries, _, err := loadConfig(configPathOf(args[1:]))
	if err != nil {
		return err
	}
	cfgArgs, warnings := configArgs(role, entries)
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "time=%q level=warning msg=%q\n", time.Now().Format(time.RFC3339), w)
	}
	all := append(append([]string{}, cfgArgs...), withoutConfigFlag(args[1:])...)
	s, parseErr := parseArgs(role, all)
	// As the flags' EnvVars: K3S_TOKEN and K3S_URL (which install.sh puts in
	// the unit's environment file) count where neither config nor command
	// line sets the flag.
	for flag, env := range map[string]string{"token": "K3S_TOKEN", "server": "K3S_URL"} {
		if v := os.Getenv(env); v != "" && s != nil && len(s[flag]) == 0 {
			s[flag] = []string{v}
		}
	}
	mirrors, regErr := loadRegistries(registriesPath)
	if parseErr == nil {
		parseErr = regErr
	}
	record(role, args[1:], cfgArgs, warnings, mirrors, parseErr)
	if parseErr != nil {
		return parseErr
	}
	if role == "agent" || !s.bool("disable-agent") {
		if err := validateCgroups("/"); err != nil {
			return err
		}
	}
	bed, err := readBed()
	if err != nil {
		return err
	}
	if role == "server" {
		return runServer(s, bed)
	}
	return runAgent(s, bed)
}

// configPathOf is the config file k3s reads: --config/-c, else
// $K3S_CONFIG_FILE, else the default.
func configPathOf(args []string) string {
	path := os.Getenv("K3S_CONFIG_FILE")
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			path = v
		} else if (a == "--config" || a == "-c") && i+1 < len(args) {
			path = args[i+1]
		}
	}
	if path == "" {
		path = defaultConfig
	}
	return path
}

func withoutConfigFlag(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], "--config="):
		case args[i] == "--config" || args[i] == "-c":
			i++
		default:
			out = append(out, args[i])
		}
	}
	return out
}

func readBed() (bedInfo, error) {
	var b bedInfo
	raw, err := os.ReadFile(bedFile)
	if err != nil {
		return b, fmt.Errorf("k3s stand-in: read test bed description: %w", err)
	}
	return b, json.Unmarshal(raw, &b)
}

func installedVersion() string {
	if v, err := os.ReadFile(filepath.Join(standinDir, "version")); err == nil && strings.TrimSpace(string(v)) != "" {
		return strings.TrimSpace(string(v))
	}
	return defaultVersion
}

// record appends what the stand-in was asked to do to its invocation log,
// with every token value masked.
func record(role string, cli, fromConfig, warnings, mirrors []string, parseErr error) {
	mask := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = a
			if i > 0 && isSecretFlag(args[i-1]) {
				out[i] = "********" // the value of "--token X"
			}
			if name, _, ok := strings.Cut(a, "="); ok && isSecretFlag(name) {
				out[i] = name + "=********"
			}
		}
		return out
	}
	line := map[string]any{"time": time.Now().Format(time.RFC3339Nano), "command": role,
		"args": mask(cli), "config_args": mask(fromConfig), "warnings": warnings, "registry_mirrors": mirrors,
		"proxy_env": proxyEnv()}
	if parseErr != nil {
		line["error"] = parseErr.Error()
	}
	raw, _ := json.Marshal(line)
	_ = os.MkdirAll(standinDir, 0o700)
	f, err := os.OpenFile(filepath.Join(standinDir, "invocations.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(raw, '\n'))
}

// registriesPath is where k3s reads its private registry configuration
// when it starts (--private-registry's default).
const registriesPath = "/etc/rancher/k3s/registries.yaml"

// loadRegistries reads registries.yaml as k3s does at start: a missing file
// is no registry configuration, a file that does not parse stops k3s. It
// returns the mirrored registries, sorted, for the invocation log.
func loadRegistries(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var doc struct {
		Mirrors map[string]struct {
			Endpoint []string          `yaml:"endpoint"`
			Rewrite  map[string]string `yaml:"rewrite"`
		} `yaml:"mirrors"`
		Configs map[string]any `yaml:"configs"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("failed to load private registry configuration %s: %w", path, err)
	}
	mirrors := make([]string, 0, len(doc.Mirrors))
	for host := range doc.Mirrors {
		mirrors = append(mirrors, host)
	}
	sort.Strings(mirrors)
	return mirrors, nil
}

// isSecretFlag tells whether a flag's value is a credential.
func isSecretFlag(arg string) bool {
	switch strings.TrimLeft(arg, "-") {
	case "token", "t", "agent-token", "etcd-s3-secret-key", "etcd-s3-access-key", "etcd-s3-session-token",
		"etcd-token", "s3-secret-key", "s3-access-key", "s3-session-token":
		return true
	}
	return false
}

// proxyEnv is the proxy k3s was started with (its unit's environment
// file), a password in a URL masked, for the tests to see it arrived.
func proxyEnv() map[string]string {
	out := map[string]string{}
	userinfo := regexp.MustCompile(`://([^:@/]+):[^@/]+@`)
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if v := os.Getenv(name); v != "" {
			out[name] = userinfo.ReplaceAllString(v, "://$1:********@")
		}
	}
	return out
}

// notifyReady tells the service manager k3s is up, as k3s does
// (pkg/cli/server/server.go after the API server answers, pkg/agent/run.go
// after the agent joined) through go-systemd's daemon.SdNotify: a
// "READY=1" datagram to $NOTIFY_SOCKET, errors ignored.
func notifyReady() {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("READY=1\n"))
}
