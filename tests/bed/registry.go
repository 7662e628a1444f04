package bed

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

// ChartVersions are the versions of the test flux-operator chart the
// registry serves, oldest first, to exercise install and upgrade.
var ChartVersions = []string{"0.58.0", "0.59.0"}

// ChartRepository is the chart's path in the registry:
// oci://<registry>/charts/flux-operator.
const ChartRepository = "charts/flux-operator"

// Registry is an OCI registry (go-containerregistry's, in process). It
// serves the same charts twice: over plain HTTP at Addr, on the bed's
// bridge, and over TLS (a certificate from the bed's CA, CAFile) with basic
// auth at TLSAddr, on the loopback, as a private registry would.
type Registry struct {
	Addr    string // host:port, plain HTTP, no auth
	TLSAddr string // host:port, HTTPS with basic auth
	// CAFile verifies TLSAddr's certificate; Username and Password are its
	// only credentials.
	CAFile, Username, Password string

	handler http.Handler
	plain   *http.Server // serving Addr, nil while paused
	servers []*http.Server
}

// RegistryUsername and RegistryPassword are the TLS registry's credentials.
const (
	RegistryUsername = "bed-puller"
	RegistryPassword = "bed-registry-secret-7f3a9c"
)

// startRegistry serves the registry: plain HTTP on the bridge's address
// (plainHost), which the hosts and a process on the bed's network alone
// (an execution environment's job) reach as well as this machine, and
// HTTPS on the loopback.
func startRegistry(ca *pki.CA, caFile, plainHost string) (r *Registry, err error) {
	r = &Registry{CAFile: caFile, Username: RegistryUsername, Password: RegistryPassword}
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.handler = handler
	if r.Addr, err = r.serve(net.JoinHostPort(plainHost, "0"), handler, nil); err != nil {
		return r, err
	}
	r.plain = r.servers[0]
	certPEM, keyPEM, err := ca.Issue("bed-registry", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return r, fmt.Errorf("issue the registry's certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return r, err
	}
	r.TLSAddr, err = r.serve("127.0.0.1:0", basicAuth(handler, r.Username, r.Password), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	return r, err
}

// Pause stops serving plain HTTP at Addr (connections are refused), as a
// registry that is down; Resume serves the same charts there again.
func (r *Registry) Pause() error {
	if r.plain == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.plain.Shutdown(ctx)
	r.plain = nil
	return err
}

// Resume undoes Pause.
func (r *Registry) Resume() error {
	if r.plain != nil {
		return nil
	}
	if _, err := r.serve(r.Addr, r.handler, nil); err != nil {
		return err
	}
	r.plain = r.servers[len(r.servers)-1]
	return nil
}

// serve serves h on addr, over TLS when cfg is not nil, and says where.
func (r *Registry) serve(addr string, h http.Handler, cfg *tls.Config) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen for the OCI registry: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg}
	r.servers = append(r.servers, srv)
	go func() {
		if cfg != nil {
			_ = srv.ServeTLS(l, "", "")
			return
		}
		_ = srv.Serve(l)
	}()
	return l.Addr().String(), nil
}

// basicAuth answers 401 with a Basic challenge unless the request carries
// the credentials, as registries with htpasswd auth do.
func basicAuth(h http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="bed-registry"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// ChartRef is the oci:// reference of the test chart, without version.
func (r *Registry) ChartRef() string {
	return "oci://" + r.Addr + "/" + ChartRepository
}

// TLSChartRef is the same chart on the TLS registry with basic auth.
func (r *Registry) TLSChartRef() string {
	return "oci://" + r.TLSAddr + "/" + ChartRepository
}

func (r *Registry) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range r.servers {
		_ = srv.Shutdown(ctx)
	}
}

// pushCharts packages the test chart at each of ChartVersions, with the
// operator's CRDs from the cache, and pushes them with Helm's registry
// client. The packaged .tgz files stay in dir for tests that want a local
// chart path.
func (r *Registry) pushCharts(chartDir, crdDir, dir string) error {
	crds, err := readCRDs(crdDir)
	if err != nil {
		return err
	}
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard))
	if err != nil {
		return fmt.Errorf("helm registry client: %w", err)
	}
	for _, v := range ChartVersions {
		ch, err := loader.LoadDir(chartDir)
		if err != nil {
			return fmt.Errorf("load test chart %s: %w", chartDir, err)
		}
		ch.Metadata.Version = v
		ch.Metadata.AppVersion = "v" + v
		ch.Files = append(ch.Files, &chart.File{Name: "files/crds.yaml", Data: crds})
		path, err := chartutil.Save(ch, dir)
		if err != nil {
			return fmt.Errorf("package test chart %s: %w", v, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ref := fmt.Sprintf("%s/%s:%s", r.Addr, ChartRepository, v)
		if _, err := client.Push(data, ref); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return nil
}

// readCRDs joins the operator's CRD files into one multi-document YAML.
func readCRDs(dir string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, errors.Join(fmt.Errorf("no CRDs in %s: run `make testbed-bin`", dir), err)
	}
	sort.Strings(files)
	var docs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, strings.TrimSpace(strings.TrimPrefix(string(data), "---")))
	}
	return []byte("---\n" + strings.Join(docs, "\n---\n") + "\n"), nil
}
