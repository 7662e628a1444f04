package fluxinstance

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/hostnetwork"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

const (
	apiVersion   = kube.FluxInstanceAPIVersion
	instanceKind = kube.FluxInstanceKind
	instanceName = kube.FluxInstanceName
	crdName      = kube.FluxInstanceCRD
)

var (
	instanceGVR   = kube.FluxInstanceGVR
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	deploymentGVR = kube.DeploymentGVR
)

type args struct {
	kube.Connection
	Src                string         `json:"src"`
	Definition         map[string]any `json:"definition"`
	State              string         `json:"state"`
	Wait               bool           `json:"wait"`
	WaitTimeout        int            `json:"wait_timeout"`
	RequireSecrets     []string       `json:"require_secrets"`
	OperatorNamespace  string         `json:"operator_namespace"`
	OperatorDeployment string         `json:"operator_deployment"`
	Uninstall          bool           `json:"uninstall"`
	Force              bool           `json:"force"`
	HostNetwork        bool           `json:"host_network"`
	ReconcileAfter     int            `json:"reconcile_stalled_after"`
}

// loadInstance reads and checks the FluxInstance; errors name the field.
func loadInstance(a args) (*unstructured.Unstructured, error) {
	def := a.Definition
	what := "definition"
	if a.Src != "" {
		what = "src " + a.Src
		raw, err := os.ReadFile(a.Src)
		if err != nil {
			return nil, fmt.Errorf("read src: %w", err)
		}
		if err := yaml.Unmarshal(raw, &def); err != nil {
			return nil, fmt.Errorf("src %s is not YAML: %w", a.Src, err)
		}
	}
	obj := &unstructured.Unstructured{Object: def}
	switch {
	case def == nil:
		return nil, fmt.Errorf("%s is empty: want a FluxInstance", what)
	case obj.GetAPIVersion() != apiVersion || obj.GetKind() != instanceKind:
		return nil, fmt.Errorf("%s holds apiVersion %q kind %q: want apiVersion %s, kind %s", what, obj.GetAPIVersion(), obj.GetKind(), apiVersion, instanceKind)
	case obj.GetName() != instanceName:
		return nil, fmt.Errorf("%s: metadata.name is %q, but the Flux Operator accepts only %q", what, obj.GetName(), instanceName)
	}
	if _, ok, _ := unstructured.NestedMap(def, "spec", "distribution"); !ok {
		return nil, fmt.Errorf("%s: spec.distribution is required (version and registry)", what)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("flux-system")
	}
	if a.HostNetwork {
		if err := hostnetwork.Add(obj); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return obj, nil
}

func run(ctx context.Context, req *ansible.Request, connect kube.Connector) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	res := &ansible.Result{}
	res.Set("adopted", false)
	res.Set("reconciles_requested", []string{})
	if a.ReconcileAfter < 0 {
		return res, fmt.Errorf("reconcile_stalled_after must be 0 (never) or a number of seconds, got %d", a.ReconcileAfter)
	}
	var desired *unstructured.Unstructured
	if a.State == "present" {
		var err error
		if desired, err = loadInstance(a); err != nil {
			return res, err
		}
	}
	if a.Connection.PlanWithoutCluster(req) {
		if a.State == "present" {
			planCreate(res, desired)
		}
		return res, nil
	}
	clients, err := connect(a.Connection)
	if err != nil {
		return res, err
	}
	timeout := time.Duration(a.WaitTimeout) * time.Second
	if a.State == "absent" {
		return res, absent(ctx, req, res, clients, a, timeout)
	}
	if ready, err := operatorReady(ctx, req, res, clients, a, timeout); err != nil || !ready {
		if err == nil {
			planCreate(res, desired)
		}
		return res, err
	}
	missing, err := missingSecrets(ctx, clients, a.RequireSecrets)
	if err != nil {
		return res, err
	}
	if len(missing) > 0 {
		if !req.CheckMode {
			return res, fmt.Errorf("required Secrets missing, so the FluxInstance was not applied: %s (create them first, e.g. with gitops.k3s_flux.seed_secret)", strings.Join(missing, ", "))
		}
		req.Warn("required Secrets missing: %s; a real run fails here unless they exist by then (seed_secret creates them)", strings.Join(missing, ", "))
	}
	return res, present(ctx, req, res, clients, a, desired, timeout)
}

// absent deletes the instance, unless Flux adopted it: read, decide, then
// delete.
func absent(ctx context.Context, req *ansible.Request, res *ansible.Result, clients *kube.Clients, a args, timeout time.Duration) error {
	ns := instanceNamespace(a)
	current, err := clients.Get(ctx, instanceGVR, ns, instanceName)
	if err != nil {
		return err
	}
	p := decideRemoval(a, current)
	p.report(req, res, ns)
	if p.current == nil || req.CheckMode {
		return nil
	}
	return remove(ctx, clients, a, ns, timeout)
}

// removalPlan is what absent does to the instance, decided before anything
// is deleted.
type removalPlan struct {
	current   *unstructured.Unstructured // the instance to delete; nil: nothing to delete
	adoptedBy string                     // the Flux object that adopted it: left alone
}

// decideRemoval is the plan for the instance as read (nil: there is none).
// The same policy as for present, and as the other modules': an object
// Flux adopted is left alone, with a warning, unless forced.
func decideRemoval(a args, current *unstructured.Unstructured) removalPlan {
	if current == nil {
		return removalPlan{}
	}
	if by, adopted := kube.FluxOwned(current); adopted && !a.Force {
		return removalPlan{adoptedBy: by}
	}
	return removalPlan{current: current}
}

// report puts the plan in the result: adopted and its warning, or changed
// and the diff of the deletion.
func (p removalPlan) report(req *ansible.Request, res *ansible.Result, ns string) {
	if p.adoptedBy != "" {
		res.Set("adopted", true)
		req.Warn("FluxInstance %s/flux is adopted by Flux (%s): left alone, not deleted; set force=true to delete it anyway", ns, p.adoptedBy)
	}
	if p.current != nil {
		res.Changed = true
		res.Diff = instanceDiff(ns, p.current, nil)
	}
}

// operatorReady waits for the Flux Operator; in check mode, which installs
// no operator, it looks once at the CRD instead: false when the CRD is not
// there yet, and the plan is the definition alone.
func operatorReady(ctx context.Context, req *ansible.Request, res *ansible.Result, clients *kube.Clients, a args, timeout time.Duration) (bool, error) {
	if req.CheckMode {
		// A wait for the operator could only time out.
		established, err := crdEstablished(ctx, clients)
		if err != nil || established {
			return established, err
		}
		req.Warn("the FluxInstance CRD (%s) is not established yet (the Flux Operator's chart installs it): planned from the definition alone, without the API server's validation", crdName)
		return false, nil
	}
	deployment, err := waitForOperator(ctx, clients, a, req, timeout)
	if err != nil && deployment != nil {
		res.Set("conditions", kube.Conditions(deployment))
		res.Set("events", clients.RecentEvents(ctx, a.OperatorNamespace, "Deployment", a.OperatorDeployment, 5))
	}
	return err == nil, err
}

// instancePlan is what present does to the instance, decided before any
// change from the API server's server-side dry run of the definition.
type instancePlan struct {
	current   *unstructured.Unstructured // nil when there is none
	planned   *unstructured.Unstructured // the dry run's object
	adoptedBy string                     // the Flux object that adopted it: left alone
	change    bool
}

// planInstance compares the instance with the dry run of desired; one Flux
// adopted is left alone unless forced.
func planInstance(ctx context.Context, clients *kube.Clients, a args, desired *unstructured.Unstructured) (instancePlan, error) {
	current, err := clients.Get(ctx, instanceGVR, desired.GetNamespace(), instanceName)
	if err != nil {
		return instancePlan{}, err
	}
	if current != nil {
		if by, adopted := kube.FluxOwned(current); adopted && !a.Force {
			return instancePlan{current: current, adoptedBy: by}, nil
		}
	}
	planned, err := clients.Apply(ctx, instanceGVR, desired, true)
	if err != nil {
		return instancePlan{}, err
	}
	return instancePlan{current: current, planned: planned, change: current == nil || !sameObject(current, planned)}, nil
}

// present plans the instance, and unless in check mode (the plan alone) or
// adopted, applies it and waits for it to be Ready.
func present(ctx context.Context, req *ansible.Request, res *ansible.Result, clients *kube.Clients, a args, desired *unstructured.Unstructured, timeout time.Duration) error {
	p, err := planInstance(ctx, clients, a, desired)
	if err != nil {
		return err
	}
	if p.adoptedBy != "" {
		res.Set("adopted", true)
		req.Warn("FluxInstance %s is adopted by Flux (%s): left alone; set force=true to apply anyway", kube.ObjectName(p.current), p.adoptedBy)
		report(res, p.current)
		return nil
	}
	if p.change {
		res.Changed = true
		res.Diff = instanceDiff(desired.GetNamespace(), p.current, p.planned)
	}
	if req.CheckMode {
		report(res, p.current)
		return nil
	}
	return applyInstance(ctx, req, res, clients, a, desired, p, timeout)
}

// applyInstance carries plan p out: the instance applied when it changes,
// then, when asked, a wait for it to be Ready.
func applyInstance(ctx context.Context, req *ansible.Request, res *ansible.Result, clients *kube.Clients, a args, desired *unstructured.Unstructured, p instancePlan, timeout time.Duration) error {
	current := p.current
	if p.change {
		var err error
		if current, err = clients.Apply(ctx, instanceGVR, desired, false); err != nil {
			return err
		}
	}
	if a.Wait {
		nudger := &kube.Nudger{After: time.Duration(a.ReconcileAfter) * time.Second, Now: time.Now}
		last, requested, err := waitReady(ctx, clients, current, timeout, nudger, req)
		res.Set("reconciles_requested", requested)
		if err != nil {
			if last != nil {
				res.Set("conditions", kube.Conditions(last))
				res.Set("events", clients.RecentEvents(ctx, last.GetNamespace(), instanceKind, instanceName, 8))
				report(res, last)
			}
			return err
		}
		current = last
	}
	report(res, current)
	return nil
}

// planCreate is the check-mode result when the instance cannot be
// dry-run (no cluster yet, or no CRD yet): it would be created as defined.
func planCreate(res *ansible.Result, desired *unstructured.Unstructured) {
	res.Changed = true
	res.Diff = instanceDiff(desired.GetNamespace(), nil, desired)
	report(res, nil)
}

func instanceDiff(ns string, before, after *unstructured.Unstructured) []ansible.Diff {
	header := "fluxinstance/" + ns + "/" + instanceName
	return []ansible.Diff{{Before: render(before), After: render(after), BeforeHeader: header, AfterHeader: header}}
}

// sameObject compares what an apply would leave with what is there: the
// spec, labels and annotations.
func sameObject(current, planned *unstructured.Unstructured) bool {
	cs, _, _ := unstructured.NestedFieldNoCopy(current.Object, "spec")
	ps, _, _ := unstructured.NestedFieldNoCopy(planned.Object, "spec")
	return reflect.DeepEqual(cs, ps) &&
		reflect.DeepEqual(current.GetLabels(), planned.GetLabels()) &&
		reflect.DeepEqual(current.GetAnnotations(), planned.GetAnnotations())
}

// render shows the parts of the instance a user writes, for diffs.
func render(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	view := map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
		"metadata": map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}}
	if l := obj.GetLabels(); len(l) > 0 {
		view["metadata"].(map[string]any)["labels"] = l
	}
	if an := obj.GetAnnotations(); len(an) > 0 {
		view["metadata"].(map[string]any)["annotations"] = an
	}
	if spec, ok := obj.Object["spec"]; ok {
		view["spec"] = spec
	}
	out, _ := yaml.Marshal(view)
	return string(out)
}

// waitForOperator waits until the FluxInstance CRD is established and the
// operator Deployment is available; on failure it returns the Deployment as
// it last saw it (nil when there was none).
func waitForOperator(ctx context.Context, c *kube.Clients, a args, req *ansible.Request, timeout time.Duration) (*unstructured.Unstructured, error) {
	var last string
	var deploymentSeen *unstructured.Unstructured
	deployment := a.OperatorNamespace + "/" + a.OperatorDeployment
	ready, err := kube.Poll(ctx, 250*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		established, err := crdEstablished(ctx, c)
		if err != nil {
			return false, err
		}
		if !established {
			last = fmt.Sprintf("the FluxInstance CRD (%s) is not established; is the Flux Operator installed?", crdName)
			return false, nil
		}
		dep, err := c.Get(ctx, deploymentGVR, a.OperatorNamespace, a.OperatorDeployment)
		if err != nil {
			return false, err
		}
		if dep == nil {
			last = fmt.Sprintf("the Flux Operator Deployment %s does not exist", deployment)
			return false, nil
		}
		if !hasCondition(dep, "Available") {
			last = fmt.Sprintf("the Flux Operator Deployment %s is not available", deployment)
			deploymentSeen = dep
			return false, nil
		}
		return true, nil
	}, kube.Reporter(req.Progress, func() { req.Progress("waiting for the Flux Operator: %s", last) }))
	if ready {
		req.Progress("the Flux Operator is ready (CRD established, %s available)", deployment)
	}
	if ready {
		return nil, nil
	}
	if err != nil {
		return deploymentSeen, err
	}
	return deploymentSeen, fmt.Errorf("waited %s for the Flux Operator: %s", timeout, last)
}

// crdEstablished tells whether the FluxInstance CRD is there and served.
func crdEstablished(ctx context.Context, c *kube.Clients) (bool, error) {
	crd, err := c.Get(ctx, crdGVR, "", crdName)
	return crd != nil && hasCondition(crd, "Established"), err
}

func hasCondition(obj *unstructured.Unstructured, condition string) bool {
	for _, c := range kube.Conditions(obj) {
		if c.Type == condition && c.Status == "True" {
			return true
		}
	}
	return false
}

// missingSecrets lists the required Secrets that do not exist.
func missingSecrets(ctx context.Context, c *kube.Clients, required []string) ([]string, error) {
	var missing []string
	for _, r := range required {
		ns, name, ok := strings.Cut(r, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("require_secrets entry %q must be namespace/name", r)
		}
		_, err := c.Typed.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			missing = append(missing, r)
		} else if err != nil {
			return nil, fmt.Errorf("get Secret %s: %w", r, err)
		}
	}
	return missing, nil
}

// waitReady waits until the instance is Ready for its generation and
// returns it as it last saw it, with the reconciles it requested of the
// operator while the instance showed no progress (nudger); on timeout the
// error carries its Ready condition.
func waitReady(ctx context.Context, c *kube.Clients, obj *unstructured.Unstructured, timeout time.Duration, nudger *kube.Nudger, req *ansible.Request) (*unstructured.Unstructured, []string, error) {
	ns := obj.GetNamespace()
	key := instanceKind + "/" + ns + "/" + instanceName
	var last *unstructured.Unstructured
	requested := []string{}
	ready, err := kube.Poll(ctx, 250*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		o, err := c.Get(ctx, instanceGVR, ns, instanceName)
		if err != nil || o == nil {
			return false, err
		}
		last = o
		// Stalled is terminal: no retry until the spec changes.
		if cond, stalled := kube.StalledOf(o); stalled {
			return false, fmt.Errorf("FluxInstance %s/%s is stalled: %s: %s", ns, instanceName, cond.Reason, cond.Message)
		}
		if handedOff(o) {
			return true, nil
		}
		if nudger.Due(key, kube.StatusState(o)) {
			if err := c.RequestReconcile(ctx, instanceGVR, ns, instanceName, time.Now()); err != nil {
				return false, err
			}
			requested = append(requested, key)
			r := kube.ReadinessOf(o)
			req.Progress("requested a reconcile of %s: its status has not changed for %ds (Ready=%s %s: %s)", key, int(nudger.After.Seconds()), r.Status, r.Reason, r.Message)
		}
		return false, nil
	}, kube.Reporter(req.Progress, func() {
		if last != nil {
			r := kube.ReadinessOf(last)
			req.Progress("waiting for FluxInstance %s/%s: Ready=%s %s: %s (applied revision %q)", ns, instanceName, r.Status, r.Reason, r.Message, appliedRevision(last))
		}
	}))
	if ready {
		req.Progress("FluxInstance %s/%s is Ready", ns, instanceName)
		return last, requested, nil
	}
	if err != nil {
		return last, requested, err
	}
	r := kube.Readiness{Status: "Unknown", Reason: "NotFound", Message: "the instance is gone"}
	if last != nil {
		r = kube.ReadinessOf(last)
	}
	nudged := ""
	if len(requested) > 0 {
		nudged = fmt.Sprintf("; no progress after %d reconcile requests", len(requested))
	}
	if r.Ready {
		return last, requested, fmt.Errorf("FluxInstance %s/%s Ready but no applied revision in its status after %s%s", ns, instanceName, timeout, nudged)
	}
	return last, requested, fmt.Errorf("FluxInstance %s/%s not Ready after %s: Ready=%s %s: %s%s", ns, instanceName, timeout, r.Status, r.Reason, r.Message, nudged)
}

// handedOff: Ready for the current generation and the applied revision
// recorded. The operator patches the conditions apart from the other status
// fields, so a poll can see Ready=True before lastAppliedRevision and
// components arrive; returning then would report neither.
func handedOff(obj *unstructured.Unstructured) bool {
	return kube.ReadinessOf(obj).Ready && appliedRevision(obj) != ""
}

func appliedRevision(obj *unstructured.Unstructured) string {
	rev, _, _ := unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	return rev
}

// report sets the hand-off results from the instance's status.
func report(res *ansible.Result, obj *unstructured.Unstructured) {
	if obj == nil {
		res.Set("ready", false)
		return
	}
	r := kube.ReadinessOf(obj)
	res.Set("ready", r.Ready)
	res.Set("reason", r.Reason)
	res.Set("message", r.Message)
	res.Set("last_applied_revision", appliedRevision(obj))
	components, _, _ := unstructured.NestedSlice(obj.Object, "status", "components")
	if components == nil {
		components = []any{}
	}
	res.Set("components", components)
}

// instanceNamespace is where the instance lives: the definition's
// namespace, or flux-system.
func instanceNamespace(a args) string {
	if a.Definition != nil || a.Src != "" {
		if obj, err := loadInstance(a); err == nil {
			return obj.GetNamespace()
		}
	}
	return "flux-system"
}

// remove deletes the instance, first disabling reconciliation when Flux
// is to stay, and with wait until the operator's finalizer is done.
func remove(ctx context.Context, c *kube.Clients, a args, ns string, timeout time.Duration) error {
	if !a.Uninstall {
		patch := []byte(`{"metadata":{"annotations":{"fluxcd.controlplane.io/reconcile":"disabled"}}}`)
		if _, err := c.Dynamic.Resource(instanceGVR).Namespace(ns).Patch(ctx, instanceName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("disable reconciliation of FluxInstance %s/flux: %w", ns, err)
		}
	}
	if err := c.Dynamic.Resource(instanceGVR).Namespace(ns).Delete(ctx, instanceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete FluxInstance %s/flux: %w", ns, err)
	}
	if !a.Wait {
		return nil
	}
	gone, err := kube.Poll(ctx, 250*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		o, err := c.Get(ctx, instanceGVR, ns, instanceName)
		return o == nil, err
	}, nil)
	if err == nil && !gone {
		err = fmt.Errorf("FluxInstance %s/flux still exists after %s (the operator's finalizer has not finished uninstalling Flux)", ns, timeout)
	}
	return err
}
