package bed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// TestbedDropIn is the k3s config drop-in the test bed adds on a host that
// runs the real k3s server, for what this machine cannot give it (the
// product never writes it): the systemctl stand-in puts it in place before
// each start of the k3s unit (an uninstall removes /etc/rancher/k3s).
const TestbedDropIn = "/etc/rancher/k3s/config.yaml.d/99-testbed.yaml"

// testbedDropInSource is where the bed keeps it on each host.
const testbedDropInSource = testhosts.MachineDir + "/k3s-testbed.yaml"

// testbedDropIn is the drop-in's content; docs/testing.md says why for each
// key.
const testbedDropIn = `# The test bed's (tests/bed/realk3s.go): what a host here cannot run.
# No kubelet or container runtime here: the server runs without its agent;
# its Node is registered by the test bed and played by kwok.
disable-agent: true
# No CNI binaries (host-local) without the agent's data; nothing routes Pods.
flannel-backend: none
# Nothing to tunnel to without agents: the API server dials directly.
egress-selector-mode: disabled
# No cloud-controller-manager or Helm jobs without a kubelet to run them.
disable-cloud-controller: true
disable-helm-controller: true
disable+: [coredns, servicelb, traefik, local-storage, metrics-server]
`

// RealK3s serves k3s built from its own source (tests/tools/build.sh) the
// way get.k3s.io and GitHub's releases serve it: k3s's install.sh,
// unchanged, at InstallURL, and for each version
// <ReleaseURL>/download/<version>/k3s and sha256sum-amd64.txt, the
// layout install.sh downloads from its GITHUB_URL.
type RealK3s struct {
	InstallURL string
	ReleaseURL string
	// Version is K3S_VERSION; UpgradeVersion the same source under a
	// later version string (K3S_UPGRADE_VERSION).
	Version, UpgradeVersion string
	server                  *http.Server
}

func startRealK3s(addr string) (*RealK3s, error) {
	v := Versions()
	r := &RealK3s{Version: v["K3S_VERSION"], UpgradeVersion: v["K3S_UPGRADE_VERSION"]}
	mux := http.NewServeMux()
	var script string
	for _, version := range []string{r.Version, r.UpgradeVersion} {
		dir := filepath.Join(CacheDir(), "k3s-"+version)
		bin := filepath.Join(dir, "k3s")
		raw, err := os.ReadFile(bin)
		if err != nil {
			return nil, fmt.Errorf("k3s %s is not built: run `make testbed-bin` (tests/tools/build.sh): %w", version, err)
		}
		sum := sha256.Sum256(raw)
		sums := hex.EncodeToString(sum[:]) + "  k3s\n"
		base := "/releases/download/" + version + "/"
		mux.HandleFunc(base+"k3s", func(w http.ResponseWriter, req *http.Request) { http.ServeFile(w, req, bin) })
		mux.HandleFunc(base+"sha256sum-amd64.txt", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(sums)) })
		script = filepath.Join(dir, "install.sh")
	}
	mux.HandleFunc("/install.sh", func(w http.ResponseWriter, req *http.Request) { http.ServeFile(w, req, script) })
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen for the k3s downloads: %w", err)
	}
	base := "http://" + l.Addr().String()
	r.InstallURL, r.ReleaseURL = base+"/install.sh", base+"/releases"
	r.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.server.Serve(l) }()
	return r, nil
}

func (r *RealK3s) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.server.Shutdown(ctx)
}

// serverNodes plays, for each k3s server the bed runs, the part of k3s's
// own agent that registers the server's Node (the server runs without
// it): once the server's API answers, the Node is created with the labels
// k3s's agent gives a server and handed to kwok, which plays its kubelet.
// One kwok serves the cluster; when the cluster is another (its CA
// changed: every server was rebuilt), kwok is started again for it.
type serverNodes struct {
	dir   string
	kwok  string // the kwok binary
	hosts []*testhosts.Host

	mu         sync.Mutex
	kubeconfig string // the admin kubeconfig of the cluster found, "" until then
	caHash     string
	kwokProc   *Process
	server     *testhosts.Host                  // the server kwok talks to
	clients    map[*testhosts.Host]serverClient // only loop's goroutine uses it
	annotated  map[*testhosts.Host]string       // the k3s pid whose start annotateEncryption played; loop's only
	stopped    chan struct{}
	done       chan struct{}
}

func startServerNodes(dir string, hosts []*testhosts.Host) (*serverNodes, error) {
	kwok, err := binary("kwok", "KWOK_VERSION")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		return nil, err
	}
	s := &serverNodes{dir: dir, kwok: kwok, hosts: hosts, clients: map[*testhosts.Host]serverClient{}, annotated: map[*testhosts.Host]string{}, stopped: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s, nil
}

func (s *serverNodes) loop() {
	defer close(s.done)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, h := range s.hosts {
			_ = s.register(h) // not up yet: the next round tries again
		}
		select {
		case <-s.stopped:
			return
		case <-tick.C:
		}
	}
}

var (
	nodeNameKey          = regexp.MustCompile(`(?m)^node-name:\s*["']?([^"'\s]+)`)
	secretsEncryptionKey = regexp.MustCompile(`(?m)^secrets-encryption:\s*["']?(true|yes|on)\b`)
)

// hostFiles is what register reads of a host in one exec: its admin
// kubeconfig, then, after the marker, its k3s config and drop-ins.
const hostFiles = "cat /etc/rancher/k3s/k3s.yaml 2>/dev/null; echo '#--- k3s config'; cat /etc/rancher/k3s/config.yaml /etc/rancher/k3s/config.yaml.d/*.yaml 2>/dev/null; true"

// encryptionFiles is what annotateEncryption reads of a host, once its k3s
// answered (k3s reconciles its files with the datastore before its API
// serves): the pid of the k3s the systemctl stand-in runs
// (k3sstandin/systemctl.sh), then k3s's encryption hash file (the default
// data-dir: the bed's servers use it).
const encryptionFiles = "cat /var/lib/testhost/systemd/k3s.pid 2>/dev/null; echo '#--- encryption hash'; cat /var/lib/rancher/k3s/server/cred/encryption-state.json 2>/dev/null; true"

// register makes h's Node once its server answers.
func (s *serverNodes) register(h *testhosts.Host) error {
	raw, err := h.Exec(hostFiles)
	if err != nil {
		return err
	}
	kubeconfig, configs, _ := strings.Cut(raw, "#--- k3s config")
	if strings.TrimSpace(kubeconfig) == "" {
		return errors.New("no kubeconfig yet")
	}
	kc, cfg, ca, err := s.client(h, kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kc.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		// A new connection next round: this one may lead nowhere now.
		delete(s.clients, h)
		return err
	}
	if err := s.attach(h, cfg, ca); err != nil {
		return err
	}
	name := h.Name
	if m := nodeNameKey.FindAllStringSubmatch(configs, -1); len(m) > 0 {
		name = m[len(m)-1][1]
	}
	// The kubelet reports the version of the k3s it is part of: the
	// server's own (kwok keeps what the Node was given), so an upgrade
	// shows on the Node once the new version runs.
	sv, err := kc.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	nodeInfo := corev1.NodeSystemInfo{KubeletVersion: sv.GitVersion, ContainerRuntimeVersion: "containerd://2.1.5-k3s1"}
	existing, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if existing.Status.NodeInfo.KubeletVersion != sv.GitVersion {
			patch, _ := json.Marshal(map[string]any{"status": map[string]any{"nodeInfo": nodeInfo}})
			if _, err = kc.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
				return err
			}
		}
		return s.annotateEncryption(ctx, kc, h, name, configs)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{KwokNodeAnnotation: "fake", "k3s.io/internal-ip": h.Addr, "k3s.io/hostname": h.Name},
		// As k3s's agent labels a server's Node (pkg/agent/run.go,
		// pkg/server/server.go setNodeLabelsAndAnnotations; the etcd label
		// k3s's own etcd controller adds).
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node-role.kubernetes.io/control-plane": "true", "node.kubernetes.io/instance-type": "k3s"},
	}}
	// On create the status is kept: kwok finds the addresses and versions
	// there and does not put in its own.
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.Addr}, {Type: corev1.NodeHostName, Address: h.Name}}
	node.Status.NodeInfo = nodeInfo
	_, err = kc.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	return err
}

// annotateEncryption plays, once for each start of h's k3s, the rest of
// what k3s does for its server's Node when its agent runs
// (pkg/server/server.go, setNodeLabelsAndAnnotations, skipped with
// disable-agent): with secrets-encryption, the Node's
// k3s.io/encryption-config-hash set from k3s's encryption hash file
// (pkg/secretsencrypt/config.go, BootstrapEncryptionHashAnnotation). As
// k3s, it tries again until it succeeds, and a missing file is an error.
// k3s's secrets-encrypt handlers read and write that annotation on the Node
// named NODE_NAME, which k3s's agent sets in the server's process
// (pkg/agent/config/config.go) and the systemctl stand-in gives the real
// k3s server here (TESTBED_NODE_NAME, k3sstandin/unitrun).
func (s *serverNodes) annotateEncryption(ctx context.Context, kc *kubernetes.Clientset, h *testhosts.Host, name, configs string) error {
	if !secretsEncryptionKey.MatchString(configs) {
		return nil
	}
	raw, err := h.Exec(encryptionFiles)
	if err != nil {
		return err
	}
	pid, hash, _ := strings.Cut(raw, "#--- encryption hash")
	pid, hash = strings.TrimSpace(pid), strings.TrimSpace(hash)
	if pid == "" || s.annotated[h] == pid {
		return nil
	}
	if hash == "" {
		return errors.New("secrets-encryption, but no encryption hash file yet")
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"k3s.io/encryption-config-hash": hash}}})
	if _, err := kc.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	s.annotated[h] = pid
	return nil
}

// client is a client of h's server from its admin kubeconfig, kept while
// the kubeconfig stays the same: one connection, not a TLS handshake every
// round.
func (s *serverNodes) client(h *testhosts.Host, kubeconfig string) (*kubernetes.Clientset, *clientcmdapi.Config, []byte, error) {
	if c, ok := s.clients[h]; ok && c.kubeconfig == kubeconfig {
		return c.kc, c.cfg, c.ca, nil
	}
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return nil, nil, nil, err
	}
	var ca []byte
	for _, c := range cfg.Clusters {
		c.Server = "https://" + net.JoinHostPort(h.Addr, "6443")
		ca = c.CertificateAuthorityData
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	rest.Timeout = 5 * time.Second
	kc, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return nil, nil, nil, err
	}
	s.clients[h] = serverClient{kubeconfig: kubeconfig, kc: kc, cfg: cfg, ca: ca}
	return kc, cfg, ca, nil
}

// serverClient is a server's client and what it was made from.
type serverClient struct {
	kubeconfig string
	kc         *kubernetes.Clientset
	cfg        *clientcmdapi.Config
	ca         []byte
}

// attach points kwok (and the bed's Kubeconfig) at the server h of the
// cluster whose CA is ca, unless they are at a server of it that answers.
func (s *serverNodes) attach(h *testhosts.Host, cfg *clientcmdapi.Config, ca []byte) error {
	sum := sha256.Sum256(ca)
	hash := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	// h has just answered; another server kwok talks to is asked.
	if hash == s.caHash && s.kwokProc != nil && (s.server == h || s.serverAnswers()) {
		return nil
	}
	path := filepath.Join(s.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path+".tmp"); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	if s.kwokProc != nil {
		s.kwokProc.Stop(5 * time.Second)
	}
	stages, err := kwokStages(filepath.Join(s.dir, "kwok-stages.yaml"))
	if err != nil {
		return err
	}
	s.kwokProc, err = startProcess("kwok", filepath.Join(s.dir, "logs", "kwok.log"), nil, true, s.kwok,
		"--kubeconfig="+path, "--config="+stages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--server-address=127.0.0.1:0", "--node-ip="+h.Addr, "--node-lease-duration-seconds=40")
	if err != nil {
		return err
	}
	s.kubeconfig, s.caHash, s.server = path, hash, h
	return nil
}

// serverAnswers says whether the server kwok talks to answers /readyz.
func (s *serverNodes) serverAnswers() bool {
	if s.server == nil {
		return false
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return false
	}
	cfg.Timeout = 3 * time.Second
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = kc.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// Kubeconfig is the admin kubeconfig of the cluster the servers run, once
// one answered: "" before.
func (s *serverNodes) Kubeconfig() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kubeconfig
}

func (s *serverNodes) stop() {
	close(s.stopped)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kwokProc != nil {
		s.kwokProc.Stop(5 * time.Second)
	}
}

// upReal is Up's part for RealK3s: the registry (its CA the bed's own),
// the k3s downloads, the drop-in on each controller, and the Nodes.
func (b *Bed) upReal(ctx context.Context, opts Options, start time.Time) error {
	if opts.Flux {
		return errors.New("the test bed runs Flux only against its own control plane yet, not with RealK3s")
	}
	pkiDir := filepath.Join(opts.Dir, "cluster", "pki")
	ca, err := pki.Write(pkiDir, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(b.Hosts.BridgeAddr)})
	if err != nil {
		return err
	}
	if b.Registry, err = startRegistry(ca, filepath.Join(pkiDir, pki.CACertFile), b.Hosts.BridgeAddr); err != nil {
		return err
	}
	if err := b.Registry.pushCharts(chartDir(), filepath.Join(toolDir("flux-operator", "FLUX_OPERATOR_VERSION"), "crd", "bases"), filepath.Join(opts.Dir, "charts")); err != nil {
		return fmt.Errorf("push test charts: %w", err)
	}
	if b.Real, err = startRealK3s(b.Hosts.BridgeAddr); err != nil {
		return err
	}
	var servers []*testhosts.Host
	for _, h := range b.Hosts.Hosts {
		if h.Group != "k3s_controllers" {
			continue
		}
		servers = append(servers, h)
		if err := h.WriteFile(testbedDropInSource, []byte(testbedDropIn), 0o644); err != nil {
			return err
		}
	}
	if b.nodes, err = startServerNodes(filepath.Join(opts.Dir, "cluster"), servers); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "test bed %s up in %s (real k3s %s)\n", b.Hosts.Name, time.Since(start).Round(100*time.Millisecond), b.Real.Version)
	_ = ctx
	return nil
}
