package fluxoperator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	helmkube "helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

type args struct {
	kube.Connection
	ChartRef         string         `json:"chart_ref"`
	ChartRepoURL     string         `json:"chart_repo_url"`
	ChartVersion     string         `json:"chart_version"`
	ReleaseName      string         `json:"release_name"`
	ReleaseNamespace string         `json:"release_namespace"`
	CreateNamespace  bool           `json:"create_namespace"`
	Values           map[string]any `json:"values"`
	ValuesFiles      []string       `json:"values_files"`
	Wait             bool           `json:"wait"`
	WaitTimeout      int            `json:"wait_timeout"`
	Atomic           bool           `json:"atomic"`
	State            string         `json:"state"`
	RegistryUsername string         `json:"registry_username"`
	RegistryPassword string         `json:"registry_password"`
	CAFile           string         `json:"ca_file"`
	PlainHTTP        bool           `json:"plain_http"`
	Force            bool           `json:"force"`
}

// helmConnector makes the Helm SDK's configuration and the kube clients
// for one run: newHelm in main, a memory release store and an in-memory
// cluster in the unit tests.
type helmConnector func(a args, tmpDir string, noCluster bool) (*helm, error)

func run(ctx context.Context, req *ansible.Request, connect helmConnector) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	res := &ansible.Result{}
	res.Set("adopted", false)
	values, err := mergeValues(a.ValuesFiles, a.Values)
	if err != nil {
		return res, err
	}
	h, err := connect(a, req.TmpDir, a.Connection.PlanWithoutCluster(req))
	if err != nil {
		return res, err
	}
	defer h.cleanup()

	p, err := h.plan(ctx, a, values)
	if err != nil {
		return res, err
	}
	report(req, res, a, p)
	// Check mode is the plan alone.
	if req.CheckMode || (p.change == keep && p.recover == nil) {
		return res, nil
	}
	return res, h.apply(ctx, req, res, a, p)
}

// change is what a run does to the release.
type change int

const (
	keep      change = iota // as asked already, Flux's, or absent already
	uninstall               // state absent
	deploy                  // install the chart, or upgrade the release to it
)

// operatorPlan is what a run would do, decided before anything changes.
type operatorPlan struct {
	change    change
	current   *release.Release // the newest revision; nil: none
	adoptedBy string           // Flux's helm-controller manages the release: left alone
	// recover: current was left pending by an interrupted run and is
	// brought back first, to the revision rollbackTo, or uninstalled when
	// that is nil (it never deployed).
	recover *recovery
	chart   *chart.Chart // deploy: the chart
	values  map[string]any
	// after is the release as the run leaves it: for deploy, rendered
	// (the diff's after side); nil when uninstalled.
	after *release.Release
}

type recovery struct{ rollbackTo *release.Release }

// plan reads the release, and the chart where the release is not as asked
// already, and decides; for a deploy it renders what the chart would make.
// Nothing changes.
func (h *helm) plan(ctx context.Context, a args, values map[string]any) (operatorPlan, error) {
	current, err := h.lastRelease(a.ReleaseName)
	if err != nil {
		return operatorPlan{}, err
	}
	p := operatorPlan{current: current, values: values, after: current}
	if current == nil {
		if a.State == "absent" {
			return p, nil
		}
		return h.planDeploy(ctx, a, p)
	}
	if by, adopted, err := h.adoptedBy(ctx, current); err != nil {
		return p, err
	} else if adopted && !a.Force {
		p.adoptedBy = by
		return p, nil
	}
	if isPending(current) {
		if err := notInProgress(a, current, now()); err != nil {
			return p, err
		}
	}
	if a.State == "absent" {
		p.after = nil
		if current.Info.Status != release.StatusUninstalled {
			p.change = uninstall
		}
		return p, nil
	}
	// A pinned version already deployed with the same values is a no-op
	// without a trip to the registry.
	if isPinned(a.ChartVersion) && current.Chart.Metadata.Name == refChartName(a.ChartRef) &&
		upToDate(current, strings.TrimPrefix(a.ChartVersion, "v"), values) {
		return p, nil
	}
	if isPending(current) {
		history, err := h.cfg.Releases.History(a.ReleaseName)
		if err != nil {
			return p, fmt.Errorf("read history of %s: %w", a.ReleaseName, err)
		}
		p.recover = &recovery{rollbackTo: lastDeployedBefore(history, current)}
		p.after = p.recover.rollbackTo
	}
	return h.planDeploy(ctx, a, p)
}

// planDeploy loads the chart, then keeps a release that is (or, recovered,
// will be) deployed from it with the values; else it renders what a deploy
// would make.
func (h *helm) planDeploy(ctx context.Context, a args, p operatorPlan) (operatorPlan, error) {
	var err error
	if p.chart, err = h.loadChart(a); err != nil {
		return p, err
	}
	if p.recover != nil && p.after != nil && sameRelease(p.after, p.chart.Metadata.Version, p.values) {
		return p, nil // the rollback deploys it again
	}
	if p.recover == nil && upToDate(p.after, p.chart.Metadata.Version, p.values) {
		return p, nil
	}
	rendered, err := h.render(ctx, a, p.chart, p.values, p.current)
	if err != nil {
		return p, err
	}
	p.change, p.after = deploy, rendered
	return p, nil
}

// upToDate says whether rel is deployed from the chart version with the
// values.
func upToDate(rel *release.Release, version string, values map[string]any) bool {
	return rel != nil && rel.Info.Status == release.StatusDeployed && sameRelease(rel, version, values)
}

// sameRelease says whether rel was made from the chart version with the
// values, whatever its status.
func sameRelease(rel *release.Release, version string, values map[string]any) bool {
	return rel.Chart.Metadata.Version == version && sameValues(rel.Config, values)
}

// lastDeployedBefore is the newest revision of history older than rel that
// was deployed (or superseded since), nil when none was.
func lastDeployedBefore(history []*release.Release, rel *release.Release) *release.Release {
	var last *release.Release
	for _, r := range history {
		if r.Version < rel.Version && (r.Info.Status == release.StatusDeployed || r.Info.Status == release.StatusSuperseded) &&
			(last == nil || r.Version > last.Version) {
			last = r
		}
	}
	return last
}

// report puts the plan in the result: changed, the manifests' diff, the
// release as the run leaves it (apply replaces it with the one deployed).
func report(req *ansible.Request, res *ansible.Result, a args, p operatorPlan) {
	if p.adoptedBy != "" {
		res.Set("adopted", true)
		res.Set("release", releaseInfo(p.current))
		req.Warn("Helm release %s/%s is adopted by Flux (%s): left alone; set force=true to change it anyway", a.ReleaseNamespace, a.ReleaseName, p.adoptedBy)
		return
	}
	if p.recover != nil && req.CheckMode {
		req.Warn("Helm release %s/%s is %s (an interrupted run); a real run will recover it", a.ReleaseNamespace, a.ReleaseName, p.current.Info.Status)
	}
	if p.after != nil {
		res.Set("release", releaseInfo(p.after))
	}
	if p.change == keep && p.recover == nil {
		return
	}
	res.Changed = true
	header := fmt.Sprintf("release/%s/%s", a.ReleaseNamespace, a.ReleaseName)
	before, after := "", ""
	if p.current != nil {
		before = p.current.Manifest
	}
	if p.after != nil {
		after = p.after.Manifest
	}
	res.Diff = []ansible.Diff{{Before: before, After: after, BeforeHeader: header + " " + chartName(p.current), AfterHeader: header + " " + chartName(p.after)}}
}

// apply carries the plan out: the recovery first, then the uninstall or
// the deploy.
func (h *helm) apply(ctx context.Context, req *ansible.Request, res *ansible.Result, a args, p operatorPlan) error {
	current := p.current
	if p.recover != nil {
		was := current.Info.Status
		what, err := h.recoverPending(ctx, a, current, p.recover.rollbackTo)
		if err != nil {
			return err
		}
		res.Set("recovered", what)
		req.Warn("Helm release %s/%s was %s (an interrupted run): %s", a.ReleaseNamespace, a.ReleaseName, was, what)
		if current, err = h.lastRelease(a.ReleaseName); err != nil {
			return err
		}
		if current != nil && p.change == keep {
			res.Set("release", releaseInfo(current))
		}
	}
	switch p.change {
	case uninstall:
		if err := h.uninstallRelease(ctx, a, current); err != nil {
			return fmt.Errorf("uninstall %s: %w", a.ReleaseName, err)
		}
	case deploy:
		rel, err := h.deploy(ctx, a, p.chart, p.values, current)
		if err != nil {
			return err
		}
		res.Set("release", releaseInfo(rel))
	}
	return nil
}

// helm holds the Helm SDK's configuration for one run.
type helm struct {
	cfg      *action.Configuration
	settings *cli.EnvSettings
	home     string
	kube     *kube.Clients
}

// newHelm configures the Helm SDK from the connection options, with its
// caches in a temporary directory. Without a cluster (a first run in check
// mode) its release store is empty and in memory, and it has no kube
// clients.
func newHelm(a args, tmpDir string, noCluster bool) (*helm, error) {
	home, err := os.MkdirTemp(tmpDir, "helm-")
	if err != nil {
		return nil, fmt.Errorf("create Helm cache: %w", err)
	}
	settings := cli.New()
	settings.RepositoryCache = home + "/repository"
	settings.RepositoryConfig = home + "/repositories.yaml"
	settings.RegistryConfig = home + "/registry.json"
	client, err := registryClient(a, settings.RegistryConfig)
	if err != nil {
		return nil, err
	}
	cfg := new(action.Configuration)
	cfg.RegistryClient = client
	if noCluster {
		cfg.Releases = storage.Init(driver.NewMemory())
		cfg.KubeClient = &kubefake.PrintingKubeClient{Out: io.Discard}
		cfg.Log = func(string, ...any) {}
		return &helm{cfg: cfg, settings: settings, home: home}, nil
	}
	clients, err := a.Connection.NewClients()
	if err != nil {
		return nil, err
	}
	// One connection: Helm's clients use the module's client configuration
	// (TLS options, host, QPS, user agent); its flags only load the same
	// kubeconfig first and name the namespace.
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Context, flags.Namespace = &a.Kubeconfig, &a.Context, &a.ReleaseNamespace
	if a.Kubeconfig == "" {
		flags.KubeConfig = nil
	}
	flags.WrapConfigFn = func(*rest.Config) *rest.Config { return rest.CopyConfig(clients.Config) }
	if err := cfg.Init(flags, a.ReleaseNamespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("configure Helm: %w", err)
	}
	cfg.RegistryClient = client
	if hc, ok := cfg.KubeClient.(*helmkube.Client); ok {
		cfg.KubeClient = &fastWaitClient{Client: hc, typed: clients.Typed}
	}
	return &helm{cfg: cfg, settings: settings, home: home, kube: clients}, nil
}

func (h *helm) cleanup() { _ = os.RemoveAll(h.home) }

// registryClient is one OCI registry client with every option the task
// gives: plain HTTP, the credentials and the CA together. (Helm's
// NewRegistryClientWithTLS takes a CA but drops the credentials.)
func registryClient(a args, credentialsFile string) (*registry.Client, error) {
	opts := []registry.ClientOption{registry.ClientOptWriter(io.Discard), registry.ClientOptCredentialsFile(credentialsFile)}
	if a.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	if a.RegistryUsername != "" {
		opts = append(opts, registry.ClientOptBasicAuth(a.RegistryUsername, a.RegistryPassword))
	}
	if a.CAFile != "" && !a.PlainHTTP {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read ca_file %s: %w", a.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate", a.CAFile)
		}
		tlsConf := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		opts = append(opts, registry.ClientOptHTTPClient(&http.Client{
			Transport: &http.Transport{TLSClientConfig: tlsConf, Proxy: http.ProxyFromEnvironment},
		}))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("Helm registry client: %w", err)
	}
	return client, nil
}

// lastRelease is the newest revision of the release, or nil.
func (h *helm) lastRelease(name string) (*release.Release, error) {
	rel, err := h.cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Helm release %s: %w", name, err)
	}
	return rel, nil
}

// adoptedBy tells whether Flux's helm-controller manages the release: its
// objects carry helm.toolkit.fluxcd.io/name. The release's first
// Deployment speaks for all of them, as Flux labels every object alike.
func (h *helm) adoptedBy(ctx context.Context, rel *release.Release) (string, bool, error) {
	deployments := releaseDeployments(rel)
	if len(deployments) == 0 {
		return "", false, nil
	}
	live, err := h.kube.Get(ctx, deploymentGVR, deployments[0].Namespace, deployments[0].Name)
	if err != nil || live == nil {
		return "", false, err
	}
	by, adopted := kube.FluxOwned(live)
	return by, adopted, nil
}

var deploymentGVR = kube.DeploymentGVR

// releaseDeployments lists the Deployments a release's manifest holds.
func releaseDeployments(rel *release.Release) []types.NamespacedName {
	var out []types.NamespacedName
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(m), &obj.Object); err != nil || obj.GetKind() != "Deployment" {
			continue
		}
		ns := obj.GetNamespace()
		if ns == "" {
			ns = rel.Namespace
		}
		out = append(out, types.NamespacedName{Namespace: ns, Name: obj.GetName()})
	}
	return out
}

// loadChart finds the chart (OCI, repository, local) at the pinned version.
func (h *helm) loadChart(a args) (*chart.Chart, error) {
	locate := action.NewInstall(h.cfg)
	locate.ChartPathOptions.Version = a.ChartVersion
	locate.ChartPathOptions.RepoURL = a.ChartRepoURL
	locate.ChartPathOptions.Username, locate.ChartPathOptions.Password = a.RegistryUsername, a.RegistryPassword
	locate.ChartPathOptions.CaFile = a.CAFile
	locate.ChartPathOptions.PlainHTTP = a.PlainHTTP
	path, err := locate.ChartPathOptions.LocateChart(a.ChartRef, h.settings)
	if err != nil {
		return nil, fmt.Errorf("find chart %s (chart_version %q): %w", a.ChartRef, a.ChartVersion, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", a.ChartRef, err)
	}
	if a.ChartVersion != "" && ch.Metadata.Version != a.ChartVersion && !strings.ContainsAny(a.ChartVersion, "^~*<>=x ") {
		return nil, fmt.Errorf("chart %s is version %s, not the chart_version %s asked for", a.ChartRef, ch.Metadata.Version, a.ChartVersion)
	}
	return ch, nil
}

// deploy installs the chart, or upgrades the release to it.
func (h *helm) deploy(ctx context.Context, a args, ch *chart.Chart, values map[string]any, current *release.Release) (*release.Release, error) {
	if current == nil || current.Info.Status == release.StatusUninstalled {
		return h.install(ctx, a, ch, values, h.newInstall(a))
	}
	return h.upgrade(ctx, a, ch, values, h.newUpgrade(a))
}

// render is what deploy would make, with nothing sent to the cluster: a
// client-side dry-run upgrade, or, for a new release (or one left pending,
// over which Helm refuses to plan an upgrade; apply recovers it first),
// the chart rendered for the cluster's version.
func (h *helm) render(ctx context.Context, a args, ch *chart.Chart, values map[string]any, current *release.Release) (*release.Release, error) {
	if current != nil && current.Info.Status != release.StatusUninstalled && !isPending(current) {
		up := h.newUpgrade(a)
		up.DryRun, up.DryRunOption = true, "client"
		return h.upgrade(ctx, a, ch, values, up)
	}
	// Helm's client-only install swaps its configuration's release store
	// and kube client for fakes: a copy, so that the run's deploy, which
	// may follow this render, still reaches the cluster.
	scratch := *h
	cfg := *h.cfg
	scratch.cfg = &cfg
	in := scratch.newInstall(a)
	// Client-only rendering assumes an old Kubernetes unless told the real one.
	in.DryRun, in.DryRunOption, in.ClientOnly = true, "client", true
	version, err := h.kubeVersion()
	if err != nil {
		return nil, err
	}
	if in.KubeVersion, err = chartutil.ParseKubeVersion(version); err != nil {
		return nil, fmt.Errorf("parse the Kubernetes version %q: %w", version, err)
	}
	return h.install(ctx, a, ch, values, in)
}

func (h *helm) newInstall(a args) *action.Install {
	in := action.NewInstall(h.cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = a.ReleaseName, a.ReleaseNamespace, a.CreateNamespace
	in.Wait, in.Timeout, in.Atomic = a.Wait, time.Duration(a.WaitTimeout)*time.Second, a.Atomic
	return in
}

func (h *helm) newUpgrade(a args) *action.Upgrade {
	up := action.NewUpgrade(h.cfg)
	up.Namespace, up.ResetValues = a.ReleaseNamespace, true
	up.Wait, up.Timeout, up.Atomic = a.Wait, time.Duration(a.WaitTimeout)*time.Second, a.Atomic
	up.CleanupOnFail = true
	return up
}

func (h *helm) install(ctx context.Context, a args, ch *chart.Chart, values map[string]any, in *action.Install) (*release.Release, error) {
	rel, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, fmt.Errorf("install %s %s into %s: %w", a.ReleaseName, ch.Metadata.Version, a.ReleaseNamespace, err)
	}
	return rel, nil
}

// kubeVersion is the API server's version or, without a cluster, the one
// this module's client-go was released with (Helm's own default, v1.20,
// fails charts that require a newer Kubernetes).
func (h *helm) kubeVersion() (string, error) {
	if h.kube == nil {
		return clientGoKubeVersion(), nil
	}
	v, err := h.kube.Typed.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("read the API server's version: %w", err)
	}
	return v.GitVersion, nil
}

// clientGoVersion is go.mod's k8s.io/client-go, for a binary without build
// information on its dependencies (a test binary); a test holds it to
// go.mod.
const clientGoVersion = "v0.37.2"

// clientGoKubeVersion maps the client-go module this binary was built with
// (v0.X.Y) to its Kubernetes release (v1.X.Y).
func clientGoKubeVersion() string {
	version := clientGoVersion
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/client-go" && strings.HasPrefix(dep.Version, "v0.") {
				version = dep.Version
			}
		}
	}
	return "v1." + strings.TrimPrefix(version, "v0.")
}

func (h *helm) upgrade(ctx context.Context, a args, ch *chart.Chart, values map[string]any, up *action.Upgrade) (*release.Release, error) {
	rel, err := up.RunWithContext(ctx, a.ReleaseName, ch, values)
	if err != nil {
		return nil, fmt.Errorf("upgrade %s to %s: %w", a.ReleaseName, ch.Metadata.Version, err)
	}
	return rel, nil
}

var pinnedVersion = regexp.MustCompile(`^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// isPinned says whether a chart_version names exactly one version (not a
// range, not empty).
func isPinned(version string) bool { return pinnedVersion.MatchString(version) }

// refChartName is the chart name a reference names (oci://host/charts/x,
// repo/x or x: "x"); "" for a local path, whose name is inside the chart.
func refChartName(ref string) string {
	if !strings.HasPrefix(ref, "oci://") {
		if _, err := os.Stat(ref); err == nil {
			return ""
		}
	}
	return path.Base(strings.TrimSuffix(ref, "/"))
}

// now is the clock; a variable so that tests can move it.
var now = time.Now

// interruptedAfter is how long after its revision started a pending
// release is taken as left by an interrupted run: our own wait_timeout plus
// a minute, as the run that started it may have its own wait still going.
func interruptedAfter(a args) time.Duration {
	return time.Duration(a.WaitTimeout)*time.Second + time.Minute
}

// notInProgress refuses to touch a pending release that another run may
// still be carrying out: recovering it would roll back or uninstall that
// run's release under it.
func notInProgress(a args, rel *release.Release, now time.Time) error {
	started := rel.Info.LastDeployed.Time
	age := now.Sub(started)
	if started.IsZero() || age >= interruptedAfter(a) {
		return nil
	}
	return fmt.Errorf("Helm release %s/%s: another operation (install/upgrade/rollback) is in progress: revision %d has been %s since %s (%s ago); "+
		"retry when it ends, or, if the run that started it was interrupted, after %s, when this module recovers it",
		a.ReleaseNamespace, a.ReleaseName, rel.Version, rel.Info.Status, started.UTC().Format(time.RFC3339), age.Round(time.Second),
		started.Add(interruptedAfter(a)).UTC().Format(time.RFC3339))
}

func isPending(rel *release.Release) bool {
	switch rel.Info.Status {
	case release.StatusPendingInstall, release.StatusPendingUpgrade, release.StatusPendingRollback:
		return true
	}
	return false
}

// recoverPending brings a release stuck pending back to a state Helm can
// act on: back to the revision to, or uninstalled when it never deployed
// (to is nil). It says what it did.
func (h *helm) recoverPending(ctx context.Context, a args, rel, to *release.Release) (string, error) {
	was := rel.Info.Status // the uninstall may change rel itself
	if to == nil {
		if err := h.uninstallRelease(ctx, a, rel); err != nil {
			return "", fmt.Errorf("recover %s from %s by uninstalling it: %w", a.ReleaseName, was, err)
		}
		return fmt.Sprintf("uninstalled revision %d, left %s, to install it afresh", rel.Version, was), nil
	}
	// A pending revision blocks the rollback: mark it failed first, as
	// Helm itself does for an interrupted operation it notices.
	rel.Info.Status = release.StatusFailed
	rel.Info.Description = "marked failed by gitops.k3s_flux: interrupted while pending"
	if err := h.cfg.Releases.Update(rel); err != nil {
		return "", fmt.Errorf("mark %s revision %d failed: %w", a.ReleaseName, rel.Version, err)
	}
	rb := action.NewRollback(h.cfg)
	rb.Version, rb.Wait, rb.Timeout = to.Version, a.Wait, time.Duration(a.WaitTimeout)*time.Second
	if err := rb.Run(a.ReleaseName); err != nil {
		return "", fmt.Errorf("recover %s by rolling back to revision %d: %w", a.ReleaseName, to.Version, err)
	}
	return fmt.Sprintf("rolled back from %s revision %d to revision %d", was, rel.Version, to.Version), nil
}

// uninstallRelease uninstalls and, with wait, polls until the release's
// Deployments are gone. (Helm's own wait can miss a deletion that happens
// before its watch starts and then sits out the whole timeout.)
func (h *helm) uninstallRelease(ctx context.Context, a args, rel *release.Release) error {
	un := action.NewUninstall(h.cfg)
	un.Timeout = time.Duration(a.WaitTimeout) * time.Second
	if _, err := un.Run(a.ReleaseName); err != nil {
		return err
	}
	if !a.Wait {
		return nil
	}
	for _, d := range releaseDeployments(rel) {
		gone, err := kube.Poll(ctx, 500*time.Millisecond, un.Timeout, func(ctx context.Context) (bool, error) {
			live, err := h.kube.Get(ctx, deploymentGVR, d.Namespace, d.Name)
			return live == nil, err
		}, nil)
		if err != nil {
			return err
		}
		if !gone {
			return fmt.Errorf("Deployment %s still exists %s after the uninstall", d, un.Timeout)
		}
	}
	return nil
}

// mergeValues merges the values files in order, then values, as helm -f
// ... --set would: maps merge key by key, anything else replaces.
func mergeValues(files []string, values map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read values_files entry %s: %w", f, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("values_files entry %s is not YAML: %w", f, err)
		}
		out = mergeMaps(out, m)
	}
	// Round-trip the task's values through YAML so numbers compare the
	// same way as the release's stored values.
	raw, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	var norm map[string]any
	if err := yaml.Unmarshal(raw, &norm); err != nil {
		return nil, err
	}
	return mergeMaps(out, norm), nil
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// sameValues compares the user-supplied values of a release with the
// wanted ones, treating nil and empty alike.
func sameValues(deployed, wanted map[string]any) bool {
	if len(deployed) == 0 && len(wanted) == 0 {
		return true
	}
	// Normalise both through YAML (numbers, nested maps).
	norm := func(m map[string]any) any {
		raw, _ := yaml.Marshal(m)
		var out any
		_ = yaml.Unmarshal(raw, &out)
		return out
	}
	return reflect.DeepEqual(norm(deployed), norm(wanted))
}

func chartName(rel *release.Release) string {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return ""
	}
	return rel.Chart.Metadata.Name + "-" + rel.Chart.Metadata.Version
}

func releaseInfo(rel *release.Release) map[string]any {
	return map[string]any{
		"name": rel.Name, "namespace": rel.Namespace, "revision": rel.Version,
		"chart": chartName(rel), "app_version": rel.Chart.Metadata.AppVersion, "status": rel.Info.Status.String(),
	}
}
