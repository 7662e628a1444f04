package bed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// K3sVersion is the version the k3s stand-in reports unless install.sh is
// given INSTALL_K3S_VERSION.
const K3sVersion = "v1.36.2+k3s1"

// K3s serves the k3s stand-in the way get.k3s.io and GitHub releases serve
// k3s: an install script and a binary, over HTTP on the test network so
// the SSH test hosts can fetch them.
type K3s struct {
	// InstallURL is the install script (the stand-in for https://get.k3s.io);
	// BinaryURL and BinarySHA256 the binary it downloads.
	InstallURL   string
	BinaryURL    string
	BinarySHA256 string
	// Binary and Script are the same files on disk, for airgap installs.
	Binary string
	Script string
	server *http.Server

	mu    sync.Mutex
	holds map[string]*heldDownload // by the address of the host whose download is held
}

// heldDownload is a host's download of the binary, held (HoldDownload).
type heldDownload struct {
	asked    chan struct{} // closed once the host asked for the binary
	askedOne sync.Once
	released chan struct{}
}

// HoldDownload holds the binary's download by the host at addr until
// release: asked is closed once that host asked for it (its install is
// under way, inside k3s_node's task), and the request is then answered
// 503, so an install that outlived a test does not go on later.
func (k *K3s) HoldDownload(addr string) (asked <-chan struct{}, release func()) {
	h := &heldDownload{asked: make(chan struct{}), released: make(chan struct{})}
	k.mu.Lock()
	if k.holds == nil {
		k.holds = map[string]*heldDownload{}
	}
	k.holds[addr] = h
	k.mu.Unlock()
	var once sync.Once
	return h.asked, func() {
		once.Do(func() {
			k.mu.Lock()
			delete(k.holds, addr)
			k.mu.Unlock()
			close(h.released)
		})
	}
}

// serveBinary serves the binary, but to a host whose download is held.
func (k *K3s) serveBinary(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	k.mu.Lock()
	h := k.holds[host]
	k.mu.Unlock()
	if h == nil {
		http.ServeFile(w, r, k.Binary)
		return
	}
	h.askedOne.Do(func() { close(h.asked) })
	select {
	case <-h.released:
	case <-r.Context().Done():
	}
	http.Error(w, "the test bed held this download, then dropped it", http.StatusServiceUnavailable)
}

// standinDir is tests/bed/k3sstandin in this source tree.
func standinDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "k3sstandin")
}

// unitrunPath is where each test host has the systemctl stand-in's unit
// runner (tests/bed/k3sstandin/unitrun): in its own MachineDir, kept
// across its reboots.
const unitrunPath = testhosts.MachineDir + "/unitrun"

// buildUnitrun builds the unit runner for the hosts (amd64: an arm host's
// kernel is this machine's, so it runs there natively too).
func buildUnitrun(ctx context.Context, dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "unitrun")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "-ldflags", "-s -w", "./unitrun")
	build.Dir = standinDir()
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the unit runner: %w: %s", err, msg)
	}
	return os.ReadFile(out)
}

// startK3s builds the stand-in for this bed (its path to the bed's
// description is compiled in) and serves it on addr.
func startK3s(ctx context.Context, dir, addr, apiServer, pkiDir string) (*K3s, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bedFile := filepath.Join(dir, "bed.json")
	raw, _ := json.Marshal(map[string]string{"api_server": apiServer, "pki_dir": pkiDir})
	if err := os.WriteFile(bedFile, raw, 0o644); err != nil {
		return nil, err
	}
	k := &K3s{Binary: filepath.Join(dir, "k3s"), Script: filepath.Join(dir, "install.sh")}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", k.Binary, "-ldflags", "-s -w -X main.bedFile="+bedFile, ".")
	build.Dir = standinDir()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the k3s stand-in: %w: %s", err, out)
	}
	bin, err := os.ReadFile(k.Binary)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(bin)
	k.BinarySHA256 = hex.EncodeToString(sum[:])

	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen for the k3s downloads: %w", err)
	}
	base := "http://" + l.Addr().String()
	k.InstallURL, k.BinaryURL = base+"/install.sh", base+"/k3s"
	script, err := os.ReadFile(filepath.Join(standinDir(), "install.sh"))
	if err != nil {
		return nil, err
	}
	rendered := strings.NewReplacer("@DOWNLOAD_URL@", k.BinaryURL, "@SHA256@", k.BinarySHA256,
		"@DEFAULT_VERSION@", K3sVersion).Replace(string(script))
	if err := os.WriteFile(k.Script, []byte(rendered), 0o755); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/install.sh", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, k.Script) })
	mux.HandleFunc("/k3s", k.serveBinary)
	k.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = k.server.Serve(l) }()
	return k, nil
}

func (k *K3s) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = k.server.Shutdown(ctx)
}

// InvocationsLog is where the k3s stand-in records, on a host, each time
// it was run (tests/bed/k3sstandin, record).
const InvocationsLog = "/var/lib/rancher/k3s/standin/invocations.log"

// Invocation is one run of the k3s stand-in on a host, as it records it
// (token values masked).
type Invocation struct {
	Time            time.Time         `json:"time"`
	Command         string            `json:"command"` // server, agent, etcd-snapshot save, ...
	Args            []string          `json:"args"`
	ConfigArgs      []string          `json:"config_args"` // the flags its config file gave
	Warnings        []string          `json:"warnings"`
	RegistryMirrors []string          `json:"registry_mirrors"` // what registries.yaml mirrored when it started
	ProxyEnv        map[string]string `json:"proxy_env"`        // the proxy variables it started with
	Error           string            `json:"error"`
}

// HasArg says whether the run was given arg, on its command line or in its
// config file.
func (inv Invocation) HasArg(arg string) bool {
	return slices.Contains(inv.Args, arg) || slices.Contains(inv.ConfigArgs, arg)
}

// Invocations reads the stand-in's record of its runs on h, oldest first:
// none when k3s never ran there.
func Invocations(h *testhosts.Host) ([]Invocation, error) {
	out, err := h.Exec("cat " + InvocationsLog + " 2>/dev/null || true")
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", h.Name, InvocationsLog, err)
	}
	var runs []Invocation
	for line := range strings.Lines(out) {
		var inv Invocation
		if err := json.Unmarshal([]byte(line), &inv); err != nil {
			return nil, fmt.Errorf("%s: %s: %w: %q", h.Name, InvocationsLog, err, line)
		}
		runs = append(runs, inv)
	}
	return runs, nil
}
