package fluxstatus

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

const revision = "refs/heads/main@sha1:4f1c9a0d2b8e6a7d5c3b1a0f9e8d7c6b5a4f3e2d"

// fluxObject is a Flux object as its controller leaves it: Ready (or not)
// for its generation, with a revision.
func fluxObject(k kind, ns, name string, ready bool, reason, message string) *unstructured.Unstructured {
	status := "True"
	if !ready {
		status = "False"
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.GVR.GroupVersion().String(), "kind": k.Name,
		"metadata": map[string]any{"name": name, "namespace": ns, "generation": int64(1)},
		"spec":     map[string]any{},
		"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{
			map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message, "observedGeneration": int64(1)}}},
	}}
	if k.Name == "GitRepository" {
		_ = unstructured.SetNestedField(u.Object, revision, "status", "artifact", "revision")
	} else {
		_ = unstructured.SetNestedField(u.Object, revision, "status", "lastAppliedRevision")
	}
	return u
}

// fluxCluster has Flux's CRDs, the sync source and its Kustomization.
func fluxCluster() *kubetest.Cluster {
	c := kubetest.New(
		kubetest.CRD(sourceKinds[0].GVR, "GitRepository"), kubetest.CRD(kustomizationKind.GVR, "Kustomization"),
		kubetest.CRD(helmReleaseKind.GVR, "HelmRelease"),
		fluxObject(sourceKinds[0], "flux-system", "flux-system", true, "Succeeded", "stored artifact for "+revision),
		fluxObject(kustomizationKind, "flux-system", "flux-system", true, "ReconciliationSucceeded", "Applied revision: "+revision),
	)
	return c
}

func status(t *testing.T, c *kubetest.Cluster, args map[string]any) (map[string]any, int) {
	t.Helper()
	args["source"] = "flux-system/flux-system"
	res, code, _ := ansibletest.Run(t, module, kube.With(run, c.Connector()), args)
	return res, code
}

func TestStatusAgainstAnInMemoryCluster(t *testing.T) {
	t.Run("no Flux: not installed, not ready; waiting says why", func(t *testing.T) {
		c := kubetest.New()
		res, code := status(t, c, map[string]any{})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["flux_installed"])
		assert.Equal(t, false, res["ready"])
		assert.Equal(t, []any{}, res["sources"])
		res, code = status(t, c, map[string]any{"wait": true, "wait_timeout": 1})
		assert.Equal(t, 1, code)
		assert.Equal(t, "Flux not ready after 1s: Flux's CRDs are not installed; source flux-system/flux-system does not exist (sources: none)", res["msg"])
	})

	t.Run("ready: the source's revision, nothing failing", func(t *testing.T) {
		c := fluxCluster()
		res, code := status(t, c, map[string]any{"wait": true, "wait_timeout": 5, "wait_for_revision": "4f1c9a0"})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["ready"])
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, revision, res["sources"].([]any)[0].(map[string]any)["revision"])
		assert.Equal(t, []any{}, res["failing"])
		assert.Equal(t, 0, c.Writes(), "read-only")
	})

	t.Run("another revision wanted: times out naming both", func(t *testing.T) {
		res, code := status(t, fluxCluster(), map[string]any{"wait": true, "wait_timeout": 1, "wait_for_revision": "deadbeef"})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "source flux-system/flux-system serves "+revision+", not deadbeef")
	})

	t.Run("a failing Kustomization is listed; waiting fails with it and its events", func(t *testing.T) {
		c := fluxCluster()
		app := fluxObject(kustomizationKind, "flux-system", "apps", false, "BuildFailed", "kustomize build failed: missing resource")
		_ = unstructured.SetNestedSlice(app.Object, []any{map[string]any{"name": "infra"}}, "spec", "dependsOn")
		c.Put(app)
		suspended := fluxObject(kustomizationKind, "flux-system", "paused", false, "Suspended", "")
		_ = unstructured.SetNestedField(suspended.Object, true, "spec", "suspend")
		c.Put(suspended)
		c.Put(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "apps.1", Namespace: "flux-system"}, Reason: "BuildFailed", Message: "missing resource",
			InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Name: "apps", Namespace: "flux-system"}, Type: "Warning"})

		res, code := status(t, c, map[string]any{})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["ready"])
		require.Len(t, res["failing"], 1, "a suspended object is not failing")
		assert.Contains(t, res["failing"].([]any)[0], "Kustomization/flux-system/apps")
		assert.Contains(t, res["failing"].([]any)[0], "kustomize build failed")
		var apps map[string]any
		for _, k := range res["kustomizations"].([]any) {
			if k.(map[string]any)["name"] == "apps" {
				apps = k.(map[string]any)
			}
		}
		assert.Equal(t, []any{"flux-system/infra"}, apps["depends_on"])

		res, code = status(t, c, map[string]any{"wait": true, "wait_timeout": 1})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "1 not Ready: Kustomization/flux-system/apps")
		assert.Contains(t, res["events"].(map[string]any)["Kustomization/flux-system/apps"].([]any)[0], "missing resource")
	})

	t.Run("a Stalled object ends the wait at once", func(t *testing.T) {
		c := fluxCluster()
		stalled := fluxObject(kustomizationKind, "flux-system", "apps", false, "InvalidPath", "path not found")
		conds, _, _ := unstructured.NestedSlice(stalled.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "Stalled", "status": "True", "reason": "InvalidPath", "message": "path ./nope not found", "observedGeneration": int64(1)})
		_ = unstructured.SetNestedSlice(stalled.Object, conds, "status", "conditions")
		c.Put(stalled)
		res, code := status(t, c, map[string]any{"wait": true, "wait_timeout": 60})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "Kustomization/flux-system/apps is stalled: InvalidPath: path ./nope not found")
	})

	t.Run("a FluxInstance that makes no such source fails at once, saying which to use", func(t *testing.T) {
		instance := func(spec map[string]any) *kubetest.Cluster {
			c := kubetest.New(kubetest.CRD(sourceKinds[0].GVR, "GitRepository"), kubetest.CRD(kube.FluxInstanceGVR, "FluxInstance"))
			c.Put(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "FluxInstance",
				"metadata": map[string]any{"name": "flux", "namespace": "flux-system"}, "spec": spec}})
			return c
		}
		res, code := status(t, instance(map[string]any{}), map[string]any{"wait": true, "wait_timeout": 60})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "FluxInstance flux-system/flux has no spec.sync")
		res, code = status(t, instance(map[string]any{"sync": map[string]any{"kind": "GitRepository", "name": "cluster"}}), map[string]any{"wait": true, "wait_timeout": 60})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "syncs through GitRepository flux-system/cluster, not flux-system/flux-system: set source to flux-system/cluster")
	})

	// A Kustomization kept "Reconciliation in progress" (a controller that lost
	// its watch in an API server outage) is asked to reconcile again, as
	// `flux reconcile` asks; the wait ends once that moves it on.
	stuck := func() *kubetest.Cluster {
		c := fluxCluster()
		c.Put(fluxObject(kustomizationKind, "flux-system", "apps", false, "Progressing", "Reconciliation in progress"))
		return c
	}
	requestedAt := func(c *kubetest.Cluster) string {
		return c.Object(kustomizationKind.GVR, "flux-system", "apps").GetAnnotations()[kube.ReconcileRequestedAt]
	}
	t.Run("no progress: a reconcile is requested, and the request moves it on", func(t *testing.T) {
		c := stuck()
		go func() { // the controller, once asked
			for requestedAt(c) == "" {
				time.Sleep(50 * time.Millisecond)
			}
			c.Put(fluxObject(kustomizationKind, "flux-system", "apps", true, "ReconciliationSucceeded", "Applied revision: "+revision))
		}()
		res, code, out := ansibletest.Run(t, module, kube.With(run, c.Connector()),
			map[string]any{"wait": true, "wait_timeout": 30, "reconcile_stalled_after": 1, "_ansible_verbosity": 1})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["ready"])
		assert.Equal(t, []any{"Kustomization/flux-system/apps"}, res["reconciles_requested"])
		assert.Contains(t, fmt.Sprint(res["progress"])+out, "requested a reconcile of Kustomization/flux-system/apps: its status has not changed for 1s (Progressing: Reconciliation in progress)")
	})
	t.Run("nothing moves: at most three requests, and the failure says so", func(t *testing.T) {
		c := stuck()
		res, code := status(t, c, map[string]any{"wait": true, "wait_timeout": 4, "reconcile_stalled_after": 1})
		assert.Equal(t, 1, code)
		n := len(res["reconciles_requested"].([]any))
		assert.True(t, n >= 2 && n <= kube.MaxReconcileRequests, "%d requests", n)
		assert.Contains(t, res["msg"], "Kustomization/flux-system/apps: Progressing: Reconciliation in progress")
		assert.Contains(t, res["msg"], fmt.Sprintf("no progress after %d reconcile requests (Kustomization/flux-system/apps", n))
		assert.NotEmpty(t, requestedAt(c))
	})
	t.Run("check mode and 0 request nothing", func(t *testing.T) {
		for _, args := range []map[string]any{{"_ansible_check_mode": true, "reconcile_stalled_after": 1}, {"reconcile_stalled_after": 0}} {
			c := stuck()
			args["wait"], args["wait_timeout"] = true, 3
			res, code := status(t, c, args)
			assert.Equal(t, 1, code)
			assert.Equal(t, []any{}, res["reconciles_requested"])
			assert.Equal(t, 0, c.Writes(), "%v", args)
		}
	})
	t.Run("a kubeconfig that may not patch: a warning, and the wait goes on without asking", func(t *testing.T) {
		c := stuck()
		c.Fail = func(verb string, gvr schema.GroupVersionResource, _ string) error {
			if verb == "patch" {
				return apierrors.NewForbidden(gvr.GroupResource(), "apps", errors.New("read-only"))
			}
			return nil
		}
		res, code := status(t, c, map[string]any{"wait": true, "wait_timeout": 3, "reconcile_stalled_after": 1})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "Flux not ready after 3s", "the wait's own end, not the refusal")
		assert.Equal(t, []any{}, res["reconciles_requested"])
		require.Len(t, res["warnings"], 1)
		assert.Contains(t, res["warnings"].([]any)[0], "could not ask Flux to reconcile Kustomization/flux-system/apps")
	})
	t.Run("a negative reconcile_stalled_after is refused", func(t *testing.T) {
		res, code := status(t, stuck(), map[string]any{"reconcile_stalled_after": -1})
		assert.Equal(t, 1, code)
		assert.Equal(t, "reconcile_stalled_after must be 0 (never) or a number of seconds, got -1", res["msg"])
	})

	t.Run("an API error is reported, naming the resource", func(t *testing.T) {
		c := fluxCluster()
		c.Fail = func(verb string, gvr schema.GroupVersionResource, _ string) error {
			if gvr.Resource == "kustomizations" {
				return assert.AnError
			}
			return nil
		}
		res, code := status(t, c, map[string]any{})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "list kustomizations: "+assert.AnError.Error())
	})
}
