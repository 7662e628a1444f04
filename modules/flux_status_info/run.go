package fluxstatus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

type args struct {
	kube.Connection
	Namespace       string `json:"namespace"`
	Source          string `json:"source"`
	WaitForRevision string `json:"wait_for_revision"`
	Wait            bool   `json:"wait"`
	WaitTimeout     int    `json:"wait_timeout"`
	ReconcileAfter  int    `json:"reconcile_stalled_after"`
}

// kinds Flux reports on, by group.
var (
	sourceKinds = []kind{
		{"GitRepository", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}},
		{"OCIRepository", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}},
		{"HelmRepository", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}},
		{"Bucket", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "buckets"}},
	}
	kustomizationKind = kind{"Kustomization", schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}}
	helmReleaseKind   = kind{"HelmRelease", schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}}
)

type kind struct {
	Name string
	GVR  schema.GroupVersionResource
}

// gvrOf is the resource of a reported kind.
func gvrOf(name string) schema.GroupVersionResource {
	for _, k := range append([]kind{kustomizationKind, helmReleaseKind}, sourceKinds...) {
		if k.Name == name {
			return k.GVR
		}
	}
	panic("flux_status_info reports no kind " + name)
}

// item is one reported object.
type item struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Ready     bool     `json:"ready"`
	Status    string   `json:"status"`
	Reason    string   `json:"reason"`
	Message   string   `json:"message"`
	Revision  string   `json:"revision"`
	DependsOn []string `json:"depends_on,omitempty"`
	Suspended bool     `json:"suspended"`
	// stalled is the Stalled condition's reason and message when Flux gave
	// up on the current generation.
	stalled string
	// state is what shows progress (kube.StatusState).
	state string
}

func (i item) failing() bool { return !i.Ready && !i.Suspended }

func (i item) line() string {
	return fmt.Sprintf("%s: %s: %s", i.key(), i.Reason, i.Message)
}

func (i item) key() string { return i.Kind + "/" + i.Namespace + "/" + i.Name }

// report is the state of Flux at one moment.
type report struct {
	Installed      bool
	Sources        []item
	Kustomizations []item
	HelmReleases   []item
	Failing        []item
	SourceFound    bool
	RevisionWanted string
	RevisionServed string
	sourceKey      string // Kind/namespace/name of the source found
}

// ready: the source exists, nothing is failing, and the source serves the
// revision asked for. Nothing to check is not success.
func (r report) ready() bool {
	return r.SourceFound && len(r.Failing) == 0 && (r.RevisionWanted == "" || revisionMatches(r.RevisionServed, r.RevisionWanted))
}

// terminal is why waiting longer cannot help, or "": a Stalled object
// (Flux gives up on it until its spec changes).
func (r report) terminal() string {
	for _, it := range r.Failing {
		if it.stalled != "" {
			return fmt.Sprintf("%s/%s/%s is stalled: %s (Flux will not retry until its spec changes)", it.Kind, it.Namespace, it.Name, it.stalled)
		}
	}
	return ""
}

// waitingOn is what the wait needs to move: what is failing, and the
// source while it does not serve the revision asked for.
func (r report) waitingOn() []item {
	items := append([]item{}, r.Failing...)
	if r.SourceFound && r.RevisionWanted != "" && !revisionMatches(r.RevisionServed, r.RevisionWanted) {
		for _, s := range r.Sources {
			if s.key() == r.sourceKey && !s.failing() {
				items = append(items, s)
			}
		}
	}
	return items
}

// revisionMatches accepts a full revision or a commit SHA prefix.
func revisionMatches(served, wanted string) bool {
	if served == "" {
		return false
	}
	if served == wanted {
		return true
	}
	_, sha, ok := strings.Cut(served, ":")
	if !ok {
		sha = served
	}
	return len(wanted) >= 7 && strings.HasPrefix(sha, wanted)
}

func run(ctx context.Context, req *ansible.Request, connect kube.Connector) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	srcNS, srcName, ok := strings.Cut(a.Source, "/")
	if !ok || srcNS == "" || srcName == "" {
		return nil, fmt.Errorf("source must be namespace/name, got %q", a.Source)
	}
	if a.ReconcileAfter < 0 {
		return nil, fmt.Errorf("reconcile_stalled_after must be 0 (never) or a number of seconds, got %d", a.ReconcileAfter)
	}
	clients, err := connect(a.Connection)
	if err != nil {
		return nil, err
	}
	var rep report
	nudger := kube.Nudger{After: time.Duration(a.ReconcileAfter) * time.Second, Now: time.Now}
	if req.CheckMode {
		nudger.After = 0 // a request is a write
	}
	requested := []string{}
	collect := func(ctx context.Context) (bool, error) {
		// A check cut short keeps the last whole report, for the timeout's
		// message.
		r, err := collectReport(ctx, clients, a.Namespace, srcNS, srcName, a.WaitForRevision)
		if err != nil {
			return false, err
		}
		rep = r
		if a.Wait && !rep.SourceFound {
			if err := syncMismatch(ctx, clients, srcNS, srcName); err != nil {
				return false, err
			}
		}
		if a.Wait && rep.terminal() != "" {
			return false, errors.New(rep.terminal())
		}
		if !a.Wait || rep.ready() {
			return rep.ready(), nil
		}
		asked, err := nudge(ctx, req, clients, rep, &nudger, a.ReconcileAfter)
		requested = append(requested, asked...)
		return false, err
	}
	if a.Wait {
		_, err = kube.Poll(ctx, 500*time.Millisecond, time.Duration(a.WaitTimeout)*time.Second, collect, kube.Reporter(req.Progress, func() {
			req.Progress("waiting for Flux: %d not Ready, source %s at %q", len(rep.Failing), a.Source, rep.RevisionServed)
		}))
	} else {
		_, err = collect(ctx)
	}
	res := &ansible.Result{}
	res.Set("reconciles_requested", requested)
	if err != nil {
		return res, err
	}
	failing := reportResult(res, rep)
	if !a.Wait || rep.ready() {
		return res, nil
	}
	events := map[string][]string{}
	for _, f := range rep.Failing {
		events[f.key()] = clients.RecentEvents(ctx, f.Namespace, f.Kind, f.Name, 5)
	}
	res.Set("events", events)
	return res, timeoutError(a, rep, failing, requested)
}

// nudge asks Flux to reconcile each object the wait is on that nudger finds
// due (no progress for after seconds), and returns their keys. A
// kubeconfig that may not ask turns the asking off, with a warning.
func nudge(ctx context.Context, req *ansible.Request, clients *kube.Clients, rep report, nudger *kube.Nudger, after int) ([]string, error) {
	var requested []string
	for _, it := range rep.waitingOn() {
		if !nudger.Due(it.key(), it.state) {
			continue
		}
		if err := clients.RequestReconcile(ctx, gvrOf(it.Kind), it.Namespace, it.Name, time.Now()); apierrors.IsForbidden(err) {
			// A read-only kubeconfig: the report is what this module is for.
			req.Warn("the wait could not ask Flux to reconcile %s, which shows no progress (%v); it waits without asking", it.key(), err)
			nudger.After = 0
			break
		} else if err != nil {
			return requested, err
		}
		requested = append(requested, it.key())
		req.Progress("requested a reconcile of %s: its status has not changed for %ds (%s: %s)", it.key(), after, it.Reason, it.Message)
	}
	return requested, nil
}

// reportResult sets the report's fields of the result and returns the
// failing objects' lines.
func reportResult(res *ansible.Result, rep report) []string {
	failing := make([]string, 0, len(rep.Failing))
	for _, f := range rep.Failing {
		failing = append(failing, f.line())
	}
	res.Set("flux_installed", rep.Installed)
	res.Set("ready", rep.ready())
	res.Set("sources", orEmpty(rep.Sources))
	res.Set("kustomizations", orEmpty(rep.Kustomizations))
	res.Set("helmreleases", orEmpty(rep.HelmReleases))
	res.Set("failing", failing)
	return failing
}

func timeoutError(a args, rep report, failing, requested []string) error {
	var why []string
	if !rep.Installed {
		why = append(why, "Flux's CRDs are not installed")
	}
	if !rep.SourceFound {
		why = append(why, fmt.Sprintf("source %s does not exist (sources: %s)", a.Source, sourceNames(rep.Sources)))
	} else if rep.RevisionWanted != "" && !revisionMatches(rep.RevisionServed, rep.RevisionWanted) {
		served := rep.RevisionServed
		if served == "" {
			served = "nothing yet"
		}
		why = append(why, fmt.Sprintf("source %s serves %s, not %s", a.Source, served, rep.RevisionWanted))
	}
	if len(failing) > 0 {
		why = append(why, fmt.Sprintf("%d not Ready: %s", len(failing), strings.Join(failing, "; ")))
	}
	if len(requested) > 0 {
		why = append(why, fmt.Sprintf("no progress after %d reconcile requests (%s)", len(requested), strings.Join(requested, ", ")))
	}
	return fmt.Errorf("Flux not ready after %ds: %s", a.WaitTimeout, strings.Join(why, "; "))
}

func sourceNames(sources []item) string {
	if len(sources) == 0 {
		return "none"
	}
	names := make([]string, 0, len(sources))
	for _, s := range sources {
		names = append(names, s.Kind+"/"+s.Namespace+"/"+s.Name)
	}
	return strings.Join(names, ", ")
}

// syncMismatch says why the source will never appear when the namespace's
// FluxInstance cannot make it: no spec.sync, or a sync under another name.
func syncMismatch(ctx context.Context, c *kube.Clients, srcNS, srcName string) error {
	inst, err := c.Get(ctx, kube.FluxInstanceGVR, srcNS, kube.FluxInstanceName)
	if err != nil || inst == nil {
		return nil // no instance (or no CRD): the source may still come
	}
	sync, found, _ := unstructured.NestedMap(inst.Object, "spec", "sync")
	if !found {
		return fmt.Errorf("FluxInstance %s/%s has no spec.sync, so it makes no source %s/%s to wait for: add spec.sync, or name your own source in the source option", srcNS, kube.FluxInstanceName, srcNS, srcName)
	}
	name, _ := sync["name"].(string)
	if name == "" {
		name = srcNS
	}
	if name != srcName {
		kind, _ := sync["kind"].(string)
		return fmt.Errorf("FluxInstance %s/%s syncs through %s %s/%s, not %s/%s: set source to %s/%s", srcNS, kube.FluxInstanceName, kind, srcNS, name, srcNS, srcName, srcNS, name)
	}
	return nil
}

func orEmpty(items []item) []item {
	if items == nil {
		return []item{}
	}
	return items
}

func collectReport(ctx context.Context, c *kube.Clients, namespace, srcNS, srcName, wantRevision string) (report, error) {
	rep := report{RevisionWanted: wantRevision}
	for _, k := range sourceKinds {
		items, installed, err := list(ctx, c, k, namespace)
		if err != nil {
			return rep, err
		}
		rep.Installed = rep.Installed || installed
		rep.Sources = append(rep.Sources, items...)
	}
	for _, it := range rep.Sources {
		if it.Namespace == srcNS && it.Name == srcName {
			rep.SourceFound = true
			rep.RevisionServed = it.Revision
			rep.sourceKey = it.key()
		}
	}
	var err error
	var installed bool
	if rep.Kustomizations, installed, err = list(ctx, c, kustomizationKind, namespace); err != nil {
		return rep, err
	}
	rep.Installed = rep.Installed || installed
	if rep.HelmReleases, _, err = list(ctx, c, helmReleaseKind, namespace); err != nil {
		return rep, err
	}
	for _, group := range [][]item{rep.Sources, rep.Kustomizations, rep.HelmReleases} {
		for _, it := range group {
			if it.failing() {
				rep.Failing = append(rep.Failing, it)
			}
		}
	}
	return rep, nil
}

// list reports every object of a kind; installed is false when the CRD
// does not exist.
func list(ctx context.Context, c *kube.Clients, k kind, namespace string) ([]item, bool, error) {
	objs, err := c.Dynamic.Resource(k.GVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", k.GVR.Resource, err)
	}
	items := make([]item, 0, len(objs.Items))
	for i := range objs.Items {
		items = append(items, toItem(k.Name, &objs.Items[i]))
	}
	sort.Slice(items, func(i, j int) bool {
		return items[i].Namespace+"/"+items[i].Name < items[j].Namespace+"/"+items[j].Name
	})
	return items, true, nil
}

func toItem(kind string, obj *unstructured.Unstructured) item {
	r := kube.ReadinessOf(obj)
	it := item{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Ready: r.Ready, Status: r.Status,
		Reason: r.Reason, Message: r.Message, Suspended: r.Suspended, state: kube.StatusState(obj)}
	if c, ok := kube.StalledOf(obj); ok {
		it.stalled = c.Reason + ": " + c.Message
	}
	if rev, ok, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision"); ok {
		it.Revision = rev
	} else {
		it.Revision, _, _ = unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	}
	deps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "dependsOn")
	for _, d := range deps {
		m, _ := d.(map[string]any)
		ns, _ := m["namespace"].(string)
		if ns == "" {
			ns = obj.GetNamespace()
		}
		name, _ := m["name"].(string)
		it.DependsOn = append(it.DependsOn, ns+"/"+name)
	}
	return it
}
