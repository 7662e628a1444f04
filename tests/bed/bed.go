// Package bed is the test bed: SSH test hosts (tests/bed/testhosts), a real
// Kubernetes control plane built from the Go module proxy (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, and kwok playing
// the kubelets), an OCI registry on loopback serving test Helm charts, and,
// when asked, the real Flux Operator and Flux controllers reconciling a git
// server on loopback. Integration tests, end-to-end tests, benchmarks and
// `make demo` all start it here.
package bed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// Options choose what the test bed runs.
type Options struct {
	// Name prefixes namespaces and interfaces (at most 6 characters);
	// Subnet is the test network's first three octets. Two beds with
	// different names and subnets can run at once.
	Name   string
	Subnet string
	// Dir holds the bed's state, certificates, logs and data.
	Dir string
	// Controllers and Workers are SSH test hosts; none by default.
	Controllers, Workers int
	// Hosts, when set, lists the hosts instead (to make one of another
	// CPU).
	Hosts []testhosts.HostSpec
	// Flux starts the Flux Operator, source-controller,
	// kustomize-controller and the git server.
	Flux bool
	// Python leaves the hosts their Python, for the benchmark's Python
	// baseline; the collection's own plays need none.
	Python bool
	// ProxyDownloads serves the k3s downloads where the hosts cannot
	// reach them (127.0.0.2, this machine's loopback, which is each host's
	// own) and starts Proxy on the test network, through which they can.
	ProxyDownloads bool
	// AuditReads has kube-apiserver keep an audit log of the reads (get,
	// list) it answered, for APIReads: when a client's requests began.
	AuditReads bool
	// RealK3s serves k3s built from its own source (RealK3s) instead of
	// the stand-in: the controllers run the real k3s server, which is then
	// the cluster's API server (the bed runs no control plane of its own;
	// Kubeconfig is the servers' once one answers); the bed registers each
	// server's Node for kwok (realk3s.go). Not with Flux yet.
	RealK3s bool
	// S3 starts an S3-compatible server on the test network (S3).
	S3 bool
}

// Bed is a running test bed.
type Bed struct {
	Dir        string
	Kubeconfig string // admin kubeconfig for the API server on the test bridge
	APIServer  string // https://<bridge address>:6443
	Registry   *Registry
	Hosts      *testhosts.Bed
	Flux       *Flux // nil unless Options.Flux
	K3s        *K3s  // the k3s stand-in's install script and binary (nil with RealK3s)
	Real       *RealK3s
	S3         *S3    // nil unless Options.S3
	Proxy      *Proxy // nil unless Options.ProxyDownloads

	cp    *controlPlane
	nodes *serverNodes // with RealK3s
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = testhosts.DefaultName
	}
	if o.Subnet == "" {
		o.Subnet = testhosts.DefaultSubnet
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(os.TempDir(), o.Name+"-testbed")
	}
}

// Up starts the test bed and returns when everything is ready.
func Up(ctx context.Context, opts Options) (b *Bed, err error) {
	opts.defaults()
	start := time.Now()
	hosts, err := testhosts.Up(testhosts.Options{Name: opts.Name, Subnet: opts.Subnet, Dir: opts.Dir,
		Hosts: opts.Hosts, Controllers: opts.Controllers, Workers: opts.Workers, BridgeOnly: opts.Controllers+opts.Workers+len(opts.Hosts) == 0, Python: opts.Python})
	if err != nil {
		return nil, err
	}
	b = &Bed{Dir: opts.Dir, Hosts: hosts}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Down())
			b = nil
		}
	}()
	// The test hosts have no systemd: each gets the systemctl stand-in
	// that starts and stops the k3s stand-in, as systemd would k3s, and
	// reboots the host; the journalctl stand-in that shows what it logged;
	// a reboot that is systemctl's (as systemd's is), never the machine's;
	// and the boot hook that starts the enabled units at each boot.
	tools := map[string][]byte{
		"/usr/local/bin/reboot":          []byte("#!/bin/sh\nexec /usr/local/bin/systemctl reboot\n"),
		testhosts.BootHooks + "/systemd": []byte("exec /usr/local/bin/systemctl __boot\n"),
	}
	for _, name := range []string{"systemctl", "journalctl"} {
		if tools["/usr/local/bin/"+name], err = os.ReadFile(filepath.Join(standinDir(), name+".sh")); err != nil {
			return b, err
		}
	}
	if tools[unitrunPath], err = buildUnitrun(ctx, opts.Dir); err != nil {
		return b, err
	}
	var hostIPs []net.IP
	for _, h := range hosts.Hosts {
		hostIPs = append(hostIPs, net.ParseIP(h.Addr))
		for path, content := range tools {
			if err := h.WriteFile(path, content, 0o755); err != nil {
				return b, err
			}
		}
	}
	if opts.S3 {
		if b.S3, err = startS3(ctx, filepath.Join(opts.Dir, "s3"), hosts.BridgeAddr); err != nil {
			return b, err
		}
	}
	if opts.RealK3s {
		return b, b.upReal(ctx, opts, start)
	}
	if b.cp, err = startControlPlane(ctx, filepath.Join(opts.Dir, "cluster"), hosts.BridgeAddr, hostIPs, opts.AuditReads); err != nil {
		return b, fmt.Errorf("start the control plane: %w", err)
	}
	b.Kubeconfig = b.cp.kubeconfig
	b.APIServer = fmt.Sprintf("https://%s:%d", hosts.BridgeAddr, APIServerPort)
	if b.Registry, err = startRegistry(b.cp.ca, filepath.Join(opts.Dir, "cluster", "pki", pki.CACertFile), hosts.BridgeAddr); err != nil {
		return b, err
	}
	if err := b.Registry.pushCharts(chartDir(), filepath.Join(toolDir("flux-operator", "FLUX_OPERATOR_VERSION"), "crd", "bases"), filepath.Join(opts.Dir, "charts")); err != nil {
		return b, fmt.Errorf("push test charts: %w", err)
	}
	downloads := hosts.BridgeAddr
	if opts.ProxyDownloads {
		downloads = "127.0.0.2"
		if b.Proxy, err = startProxy(hosts.BridgeAddr, "homelab", "proxy-s3cr@t:5d2a"); err != nil {
			return b, err
		}
	}
	if b.K3s, err = startK3s(ctx, filepath.Join(opts.Dir, "k3s"), downloads, b.APIServer, filepath.Join(opts.Dir, "cluster", "pki")); err != nil {
		return b, err
	}
	if opts.Flux {
		if b.Flux, err = startFlux(ctx, b, filepath.Join(opts.Dir, "flux")); err != nil {
			return b, fmt.Errorf("start Flux: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "test bed %s up in %s\n", b.Hosts.Name, time.Since(start).Round(100*time.Millisecond))
	return b, nil
}

// failures holds the reports of the beds whose tests failed.
var failures struct {
	sync.Mutex
	reports []string
}

// FailureReports are the reports (Report) of the beds whose tests failed,
// for a TestMain to print again at the very end of the run, where CI's
// excerpt of a failed run looks.
func FailureReports() []string {
	failures.Lock()
	defer failures.Unlock()
	return append([]string{}, failures.reports...)
}

// Start brings a test bed up for a test and tears it down after it.
func Start(t testing.TB, opts Options) *Bed {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "bed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := Up(ctx, opts)
	if err != nil {
		t.Fatalf("test bed: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			report := fmt.Sprintf("the test bed of %s as %s failed (%s):\n%s", opts.Name, t.Name(), keepLogs(opts.Dir, opts.Name), b.Report(8))
			t.Log(report)
			failures.Lock()
			failures.reports = append(failures.reports, report)
			failures.Unlock()
		}
		if err := b.Down(); err != nil {
			t.Errorf("test bed down: %v", err)
		}
	})
	return b
}

// keepLogs copies the logs of a failed test's bed (every process's, Flux's
// among them) out of the test's temporary directory, which is removed, to
// one of their own under the system's, and says where.
func keepLogs(dir, name string) string {
	kept, err := os.MkdirTemp("", "k3sf-failed-"+name+"-")
	if err != nil {
		return "logs not kept: " + err.Error()
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil // a file gone meanwhile is not worth failing the report
		}
		rel, _ := filepath.Rel(dir, path)
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		target := filepath.Join(kept, strings.ReplaceAll(rel, string(filepath.Separator), "_"))
		return os.WriteFile(target, raw, 0o600)
	})
	if err != nil {
		return "logs not kept: " + err.Error()
	}
	return "its logs are kept in " + kept
}

// Down stops everything the bed started, by PID, and removes its files.
func (b *Bed) Down() error {
	if b.Flux != nil {
		b.Flux.stop()
	}
	if b.Registry != nil {
		b.Registry.stop()
	}
	if b.K3s != nil {
		b.K3s.stop()
	}
	if b.Real != nil {
		b.Real.stop()
	}
	if b.nodes != nil {
		b.nodes.stop()
	}
	if b.S3 != nil {
		b.S3.stop()
	}
	if b.Proxy != nil {
		b.Proxy.stop()
	}
	if b.cp != nil {
		b.cp.stop()
	}
	if b.Hosts != nil {
		return b.Hosts.Down()
	}
	return nil
}

// chartDir is tests/charts/flux-operator in this source tree.
func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "charts", "flux-operator")
}
