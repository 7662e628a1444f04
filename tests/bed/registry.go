package bed

import (
	"context"
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
)

// ChartVersions are the versions of the test flux-operator chart the
// registry serves, oldest first, to exercise install and upgrade.
var ChartVersions = []string{"0.58.0", "0.59.0"}

// ChartRepository is the chart's path in the registry:
// oci://<registry>/charts/flux-operator.
const ChartRepository = "charts/flux-operator"

// Registry is an OCI registry on loopback (go-containerregistry's, in
// process), serving plain HTTP.
type Registry struct {
	Addr   string // host:port
	server *http.Server
}

func startRegistry() (*Registry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the OCI registry: %w", err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return &Registry{Addr: l.Addr().String(), server: srv}, nil
}

// ChartRef is the oci:// reference of the test chart, without version.
func (r *Registry) ChartRef() string {
	return "oci://" + r.Addr + "/" + ChartRepository
}

func (r *Registry) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.server.Shutdown(ctx)
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
