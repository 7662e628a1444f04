package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// ReconcileRequestedAt is the annotation `flux reconcile` sets: Flux's
// controllers and the Flux Operator reconcile an object again whenever its
// value changes, and record the value handled in
// status.lastHandledReconcileAt.
const ReconcileRequestedAt = "reconcile.fluxcd.io/requestedAt"

// MaxReconcileRequests is how many reconciles a wait requests of one object.
const MaxReconcileRequests = 3

// Nudger decides, during a wait, when to ask Flux to reconcile an object
// again, as a user runs `flux reconcile` when something shows no progress:
// an object whose status has not changed for After gets a request, at most
// MaxReconcileRequests times, After apart. After an API server outage,
// kustomize-controller can leave a Kustomization "Reconciliation in
// progress" until its retryInterval (its status patch lost to a stale cache;
// docs/testing.md). Pure: the caller patches (RequestReconcile) what Due
// returns true for.
type Nudger struct {
	After time.Duration // 0: never request
	Now   func() time.Time
	seen  map[string]*progressMark
}

type progressMark struct {
	state    string
	since    time.Time
	requests int
}

// Due records the state of the object named key (its status, as
// StatusState gives it) and tells whether to request a reconcile now.
func (n *Nudger) Due(key, state string) bool {
	if n.After <= 0 {
		return false
	}
	now := n.Now()
	if n.seen == nil {
		n.seen = map[string]*progressMark{}
	}
	m, ok := n.seen[key]
	if !ok {
		n.seen[key] = &progressMark{state: state, since: now}
		return false
	}
	if m.state != state {
		m.state, m.since = state, now // progress: wait again
		return false
	}
	if now.Sub(m.since) < n.After || m.requests >= MaxReconcileRequests {
		return false
	}
	m.requests++
	m.since = now
	return true
}

// StatusState is what Nudger compares to see progress: the object's
// generation and status. The request annotation is metadata, so
// requesting does not count as progress; the controller handling it does.
func StatusState(obj *unstructured.Unstructured) string {
	status, _ := json.Marshal(obj.Object["status"])
	return fmt.Sprintf("%d %s", obj.GetGeneration(), status)
}

// RequestReconcile sets the ReconcileRequestedAt annotation to at, as
// `flux reconcile` does.
func (c *Clients) RequestReconcile(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, at time.Time) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ReconcileRequestedAt, at.Format(time.RFC3339Nano))
	_, err := c.Dynamic.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("request a reconcile of %s %s: %w", gvr.Resource, joinName(namespace, name), err)
	}
	return nil
}

// ReconcileOption is the wait option that turns Nudger on: the seconds
// without progress after which a reconcile is requested.
func ReconcileOption(what string) ansible.Option {
	return ansible.Option{Name: "reconcile_stalled_after", Type: ansible.TypeInt, Default: 60,
		Description: []string{
			fmt.Sprintf("While waiting, request a reconcile of %s when its status has not changed for this many seconds, as C(flux reconcile) does (the C(%s) annotation), at most %d times each, this many seconds apart. After an API server outage a Flux controller can leave an object \"Reconciliation in progress\" until its next interval; a request moves it on.", what, ReconcileRequestedAt, MaxReconcileRequests),
			"C(0) never requests. Check mode never requests. The requests made are in C(reconciles_requested).",
		}}
}
