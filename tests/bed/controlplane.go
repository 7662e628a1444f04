package bed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

// APIServerPort is where kube-apiserver listens on the test bridge address,
// the port k3s uses.
const APIServerPort = 6443

// ServiceCIDR is k3s's default service range; the API server's in-cluster
// address (10.43.0.1) is in the serving certificate, as in k3s.
const ServiceCIDR = "10.43.0.0/16"

// controlPlane is etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, each a process.
type controlPlane struct {
	dir        string
	addr       string // the address kube-apiserver binds: the test bridge
	kubeconfig string
	auditLog   string // kube-apiserver's audit log of answered reads; "" when none is kept
	ca         *pki.CA
	procs      []*Process
}

// startControlPlane brings the control plane up on addr and waits until
// the API server is ready and the default service account exists; with
// auditReads, kube-apiserver logs the reads it answered (APIReads).
func startControlPlane(ctx context.Context, dir, addr string, hostIPs []net.IP, auditReads bool) (cp *controlPlane, err error) {
	cp = &controlPlane{dir: dir, addr: addr}
	defer func() {
		if err != nil {
			cp.stop()
		}
	}()
	bins := map[string]string{}
	for _, t := range [][2]string{{"etcd", "ETCD_VERSION"}, {"kube-apiserver", "K8S_VERSION"}, {"kube-controller-manager", "K8S_VERSION"}, {"kube-scheduler", "K8S_VERSION"}, {"kwok", "KWOK_VERSION"}} {
		if bins[t[0]], err = binary(t[0], t[1]); err != nil {
			return cp, err
		}
	}
	pkiDir := filepath.Join(dir, "pki")
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(addr), net.ParseIP("10.43.0.1")}, hostIPs...)
	if cp.ca, err = pki.Write(pkiDir, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}, ips); err != nil {
		return cp, err
	}
	server := fmt.Sprintf("https://%s:%d", addr, APIServerPort)
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(cp.kubeconfig, server, "testbed", pkiDir); err != nil {
		return cp, err
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return cp, err
	}

	clientPort, err := freePort()
	if err != nil {
		return cp, err
	}
	peerPort, err := freePort()
	if err != nil {
		return cp, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd, err := startProcess("etcd", filepath.Join(logs, "etcd.log"), nil, false, bins["etcd"],
		"--data-dir="+filepath.Join(dir, "etcd"), "--name=testbed",
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testbed="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, etcd)

	p := func(name string) string { return filepath.Join(pkiDir, name) }
	// k3s's Kubernetes writes its loopback client certificate into --cert-dir and, unlike
	// upstream's, does not make the directory.
	certDir := filepath.Join(dir, "apiserver-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return cp, err
	}
	var auditArgs []string
	if auditReads {
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditReadsPolicy), 0o600); err != nil {
			return cp, err
		}
		cp.auditLog = filepath.Join(logs, "kube-apiserver-audit.log")
		auditArgs = []string{"--audit-policy-file=" + policy, "--audit-log-path=" + cp.auditLog, "--audit-log-format=json", "--audit-log-mode=blocking"}
	}
	apiserver, err := startProcess("kube-apiserver", filepath.Join(logs, "kube-apiserver.log"), nil, false, append([]string{bins["kube-apiserver"],
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + addr, "--advertise-address=" + addr, "--secure-port=" + strconv.Itoa(APIServerPort),
		"--tls-cert-file=" + p(pki.ServingCertFile), "--tls-private-key-file=" + p(pki.ServingKeyFile),
		"--client-ca-file=" + p(pki.CACertFile),
		"--service-account-key-file=" + p(pki.SAPubFile), "--service-account-signing-key-file=" + p(pki.SAKeyFile),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=RBAC", "--allow-privileged=true",
		"--enable-priority-and-fairness=false", "--profiling=false",
		"--cert-dir=" + certDir}, auditArgs...)...)
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, apiserver)
	if err := waitFor(ctx, "kube-apiserver /readyz", 200*time.Millisecond, func() error {
		if !apiserver.Running() {
			return fmt.Errorf("kube-apiserver exited; see %s", apiserver.Log)
		}
		return cp.get("/readyz")
	}); err != nil {
		return cp, err
	}

	kcm, err := startProcess("kube-controller-manager", filepath.Join(logs, "kube-controller-manager.log"), nil, true, bins["kube-controller-manager"],
		"--kubeconfig="+cp.kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--controllers=*", "--service-account-private-key-file="+p(pki.SAKeyFile), "--root-ca-file="+p(pki.CACertFile),
		"--use-service-account-credentials=false", "--service-cluster-ip-range="+ServiceCIDR)
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, kcm)
	scheduler, err := startProcess("kube-scheduler", filepath.Join(logs, "kube-scheduler.log"), nil, true, bins["kube-scheduler"],
		"--kubeconfig="+cp.kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0")
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, scheduler)

	stages, err := kwokStages(filepath.Join(dir, "kwok-stages.yaml"))
	if err != nil {
		return cp, err
	}
	kwok, err := startProcess("kwok", filepath.Join(logs, "kwok.log"), nil, true, bins["kwok"],
		"--kubeconfig="+cp.kubeconfig, "--config="+stages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--server-address=127.0.0.1:0", "--node-ip="+addr,
		// Node Leases, renewed as a kubelet renews them: without them the node lifecycle
		// controller goes by status heartbeats, which kwok puts off whenever the Node changes
		// (a cordon, a k3s restart), and marks a busy Node's Pods NotReady for good.
		"--node-lease-duration-seconds=40")
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, kwok)

	// Pods can be created once the controller manager made the default
	// service account.
	return cp, waitFor(ctx, "the default service account", 200*time.Millisecond, func() error {
		return cp.get("/api/v1/namespaces/default/serviceaccounts/default")
	})
}

// KwokNodeAnnotation marks the Nodes kwok plays the kubelet for.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// kwokStages assembles kwok's node and pod lifecycle stages from its
// module into one config file.
func kwokStages(path string) (string, error) {
	base := filepath.Join(toolDir("kwok", "KWOK_VERSION"), "stage")
	var docs []string
	initialize, err := os.ReadFile(filepath.Join(base, "node/fast/node-initialize.yaml"))
	if err != nil {
		return "", fmt.Errorf("read kwok stage: %w", err)
	}
	cniStages, err := cniPendingStages(string(initialize))
	if err != nil {
		return "", err
	}
	docs = append(docs, cniStages...)
	for _, f := range []string{"node/heartbeat/node-heartbeat.yaml",
		"pod/general/pod-create.yaml", "pod/general/pod-init-container-running.yaml", "pod/general/pod-init-container-completed.yaml",
		"pod/general/pod-ready.yaml", "pod/general/pod-complete.yaml", "pod/general/pod-delete.yaml"} {
		data, err := os.ReadFile(filepath.Join(base, f))
		if err != nil {
			return "", fmt.Errorf("read kwok stage: %w", err)
		}
		docs = append(docs, strings.TrimSpace(string(data)))
	}
	docs = append(docs, podReadyAgain)
	// The stages wait a second plus up to five of jitter before each
	// step, to look like a kubelet; tests want Pods Ready at once.
	stages := strings.NewReplacer("durationMilliseconds: 1000", "durationMilliseconds: 0",
		"jitterDurationMilliseconds: 5000", "jitterDurationMilliseconds: 0").Replace(strings.Join(docs, "\n---\n"))
	return path, os.WriteFile(path, []byte(stages+"\n"), 0o600)
}

// podReadyAgain is the kubelet reporting a running Pod Ready again after
// the node lifecycle controller marked it NotReady (which it does when its
// Node missed heartbeats). kwok's own pod-ready stage only readies Pending
// Pods, so without this one a Node that was late once (a busy CI machine)
// kept its Pods NotReady for good: the operator's Deployment never became
// Available again, and every later flux_operator wait timed out.
const podReadyAgain = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values:
      - 'False'
  delay:
    durationMilliseconds: 2000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: ''
        reason: ''
        status: "True"
        type: Ready
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: ''
        reason: ''
        status: "True"
        type: ContainersReady`

// CNIPendingAnnotation marks a Node the k3s stand-in runs without a CNI
// (flannel-backend: none) until the CNI's Pod is Ready on it
// (tests/bed/k3sstandin/cni.go).
const CNIPendingAnnotation = "standin.k3s.io/cni"

// cniNotReady is the Ready condition a kubelet reports while no CNI has
// written its config on the node.
const cniNotReady = `      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
        reason: KubeletNotReady
        status: "False"
        type: Ready
      {{ range NodeConditions }}{{ if ne .type "Ready" }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}{{ end }}
`

// cniPendingStages derives from kwok's node-initialize stage: itself, for
// Nodes without the CNI mark only; a copy that initializes a marked Node
// with the NotReady condition; and a heartbeat that keeps it so every 8 s
// (the node lifecycle controller would otherwise call the Node Unknown).
// Once the mark goes, node-initialize makes the Node Ready.
func cniPendingStages(initialize string) ([]string, error) {
	const selector = "  selector:\n    matchExpressions:\n"
	conditions := regexp.MustCompile(`(?s)      \{\{ range NodeConditions \}\}.*?\{\{ end \}\}\n`)
	if !strings.Contains(initialize, selector) || !conditions.MatchString(initialize) || !strings.Contains(initialize, "name: node-initialize\n") {
		return nil, fmt.Errorf("kwok's node-initialize stage changed shape: update cniPendingStages")
	}
	mark := `.metadata.annotations["` + CNIPendingAnnotation + `"]`
	unmarked := strings.Replace(initialize, selector, selector+"    - key: '"+mark+"'\n      operator: 'DoesNotExist'\n", 1)
	notReady := conditions.ReplaceAllLiteralString(initialize, cniNotReady)
	pendingInit := strings.Replace(strings.Replace(notReady, "name: node-initialize\n", "name: node-cni-pending\n", 1), selector,
		selector+"    - key: '"+mark+"'\n      operator: 'In'\n      values: ['pending']\n    - key: '.status.phase'\n      operator: 'NotIn'\n      values: ['Running']\n", 1)
	heartbeat := strings.Replace(strings.Replace(notReady, "name: node-initialize\n", "name: node-cni-pending-heartbeat\n", 1), selector,
		selector+"    - key: '"+mark+"'\n      operator: 'In'\n      values: ['pending']\n    - key: '.status.phase'\n      operator: 'In'\n      values: ['Running']\n", 1)
	heartbeat = strings.Replace(heartbeat, "  next:\n", "  delay:\n    durationMilliseconds: 8000\n  next:\n", 1) + "  immediateNextStage: true\n"
	return []string{strings.TrimSpace(unmarked), strings.TrimSpace(pendingInit), strings.TrimSpace(heartbeat)}, nil
}

// get does an authenticated GET against the API server and fails on any
// status but 200.
func (cp *controlPlane) get(path string) error {
	client, err := adminHTTPClient(filepath.Join(cp.dir, "pki"))
	if err != nil {
		return err
	}
	resp, err := client.Get(fmt.Sprintf("https://%s:%d%s", cp.addr, APIServerPort, path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

func adminHTTPClient(pkiDir string) (*http.Client, error) {
	cfg, err := pki.AdminTLSConfig(pkiDir)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// writeKubeconfig writes an admin kubeconfig with embedded credentials.
func writeKubeconfig(path, server, name, pkiDir string) error {
	read := func(f string) (string, error) {
		data, err := os.ReadFile(filepath.Join(pkiDir, f))
		return pki.B64(data), err
	}
	ca, err := read(pki.CACertFile)
	if err != nil {
		return err
	}
	cert, err := read(pki.AdminCertFile)
	if err != nil {
		return err
	}
	key, err := read(pki.AdminKeyFile)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(Kubeconfig(server, name, ca, cert, key)), 0o600)
}

// Kubeconfig renders a kubeconfig with one cluster, user and context, all
// called name, with base64 credentials.
func Kubeconfig(server, name, caB64, certB64, keyB64 string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: %s
contexts:
- context:
    cluster: %s
    user: %s
  name: %s
current-context: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
`, caB64, server, name, name, name, name, name, name, certB64, keyB64)
}

func (cp *controlPlane) stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop(10 * time.Second)
	}
}

// RestartAPIServer stops kube-apiserver, keeps it down for down, then
// starts it again with the same flags and etcd and waits until it is
// ready: the blip an upgrade or a crash of the server makes.
func (b *Bed) RestartAPIServer(ctx context.Context, down time.Duration) error {
	cp := b.cp
	i := slices.IndexFunc(cp.procs, func(p *Process) bool { return p.Name == "kube-apiserver" })
	if i < 0 {
		return fmt.Errorf("restart kube-apiserver: not running")
	}
	old := cp.procs[i]
	old.Stop(time.Second) // as a crash: no long graceful drain
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	next, err := startProcess(old.Name, old.Log, old.env, old.restart, old.args...)
	if err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	cp.procs[i] = next
	return waitFor(ctx, "kube-apiserver /readyz after its restart", 200*time.Millisecond, func() error {
		return cp.get("/readyz")
	})
}

// auditReadsPolicy logs the reads (get, list) of API objects that the API
// server answered, once each, but those of Leases (every controller renews
// its own every few seconds).
const auditReadsPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: None
  nonResourceURLs: ["/*"]
- level: None
  resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
- level: Metadata
  verbs: ["get", "list"]
`

// APIRead is a read the API server answered, as its audit log has it.
type APIRead struct {
	UserAgent string    `json:"userAgent"`
	Verb      string    `json:"verb"`
	URI       string    `json:"requestURI"`
	Received  time.Time `json:"requestReceivedTimestamp"`
}

// APIReads are the reads from userAgent that the API server received
// since then and answered, oldest first (Options.AuditReads).
func (b *Bed) APIReads(userAgent string, since time.Time) ([]APIRead, error) {
	if b.cp.auditLog == "" {
		return nil, fmt.Errorf("no audit log of reads: start the bed with Options.AuditReads")
	}
	raw, err := os.ReadFile(b.cp.auditLog)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var reads []APIRead
	for line := range strings.Lines(string(raw)) {
		var r APIRead
		if json.Unmarshal([]byte(line), &r) != nil {
			continue // a line being written
		}
		if r.UserAgent == userAgent && !r.Received.Before(since) {
			reads = append(reads, r)
		}
	}
	return reads, nil
}
