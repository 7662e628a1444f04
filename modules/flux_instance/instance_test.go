package fluxinstance

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube/kubetest"
)

func definition(version string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": instanceKind, "metadata": map[string]any{"name": "flux", "namespace": "flux-system"},
		"spec": map[string]any{"distribution": map[string]any{"version": version, "registry": "ghcr.io/fluxcd"},
			"sync": map[string]any{"kind": "GitRepository", "url": "ssh://git@github.com/me/cluster", "ref": "refs/heads/main", "path": "clusters/home", "pullSecret": "git-deploy-key"}}}
}

func operatorDeployment(available bool) *unstructured.Unstructured {
	status := "False"
	if available {
		status = "True"
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "flux-operator", "namespace": "flux-system"},
		"spec":     map[string]any{"replicas": int64(1)},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": status, "reason": "MinimumReplicasUnavailable", "message": "0 of 1 available"}}}}}
}

// markReady plays the operator: the instance Ready for its generation.
func markReady(c *kubetest.Cluster, ready bool, stalled bool) {
	obj := c.Object(instanceGVR, "flux-system", "flux")
	status, reason := "True", "ReconciliationSucceeded"
	if !ready {
		status, reason = "False", "ReconciliationFailed"
	}
	conds := []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": "applied v2.9.5", "observedGeneration": obj.GetGeneration()}}
	if stalled {
		conds = append(conds, map[string]any{"type": "Stalled", "status": "True", "reason": "BuildFailed", "message": "no such version", "observedGeneration": obj.GetGeneration()})
	}
	obj.Object["status"] = map[string]any{"observedGeneration": obj.GetGeneration(), "conditions": conds, "lastAppliedRevision": "v2.9.5@sha256:4cc5",
		"components": []any{map[string]any{"name": "source-controller", "repository": "ghcr.io/fluxcd/source-controller", "tag": "v1.9.5"}}}
	c.Put(obj)
}

func TestInstanceAgainstAnInMemoryCluster(t *testing.T) {
	c := kubetest.New(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})
	apply := func(args map[string]any) (map[string]any, int) {
		t.Helper()
		res, code, _ := ansibletest.Run(t, module, kube.With(run, c.Connector()), args)
		return res, code
	}
	base := func(version string) map[string]any {
		return map[string]any{"definition": definition(version), "require_secrets": []any{"flux-system/git-deploy-key"}, "wait_timeout": 5}
	}
	check := func(args map[string]any) map[string]any {
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		return args
	}

	t.Run("check mode before the operator: planned from the definition, no wait", func(t *testing.T) {
		start := time.Now()
		res, code := apply(check(base("2.9.x")))
		require.Equal(t, 0, code, res["msg"])
		wait := time.Duration(base("2.9.x")["wait_timeout"].(int)) * time.Second
		assert.Less(t, time.Since(start), wait, "ends before its wait_timeout: no wait")
		assert.Equal(t, true, res["changed"])
		assert.Contains(t, res["warnings"].([]any)[0], "the FluxInstance CRD (fluxinstances.fluxcd.controlplane.io) is not established yet")
		assert.Contains(t, res["diff"].(map[string]any)["after"], "version: 2.9.x")
		assert.Equal(t, 0, c.Writes())
	})

	t.Run("a real run waits for the operator and says what is missing", func(t *testing.T) {
		res, code := apply(map[string]any{"definition": definition("2.9.x"), "wait_timeout": 1})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "waited 1s for the Flux Operator: the FluxInstance CRD (fluxinstances.fluxcd.controlplane.io) is not established; is the Flux Operator installed?")
		c.Put(kubetest.CRD(instanceGVR, instanceKind))
		res, code = apply(map[string]any{"definition": definition("2.9.x"), "wait_timeout": 1})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "the Flux Operator Deployment flux-system/flux-operator does not exist")
		c.Put(operatorDeployment(false))
		res, code = apply(map[string]any{"definition": definition("2.9.x"), "wait_timeout": 1})
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "the Flux Operator Deployment flux-system/flux-operator is not available")
		assert.NotEmpty(t, res["conditions"])
		assert.Equal(t, 0, c.Writes())
		c.Put(operatorDeployment(true))
	})

	t.Run("a missing required Secret: an error, and only a warning in check mode", func(t *testing.T) {
		res, code := apply(base("2.9.x"))
		assert.Equal(t, 1, code)
		assert.Equal(t, "required Secrets missing, so the FluxInstance was not applied: flux-system/git-deploy-key (create them first, e.g. with gitops.k3s_flux.seed_secret)", res["msg"])
		res, code = apply(check(base("2.9.x")))
		require.Equal(t, 0, code, res["msg"])
		assert.Contains(t, res["warnings"].([]any)[0], "required Secrets missing: flux-system/git-deploy-key; a real run fails here")
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, 0, c.Writes())
		c.Put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-deploy-key", Namespace: "flux-system"}})
	})

	t.Run("applies and waits until the operator reports Ready and the revision", func(t *testing.T) {
		go func() {
			for c.Object(instanceGVR, "flux-system", "flux") == nil {
				time.Sleep(20 * time.Millisecond)
			}
			// The operator's conditions patch lands before the rest of the status.
			markReady(c, true, false)
			obj := c.Object(instanceGVR, "flux-system", "flux")
			status := obj.Object["status"].(map[string]any)
			delete(status, "lastAppliedRevision")
			delete(status, "components")
			c.Put(obj)
			time.Sleep(600 * time.Millisecond)
			markReady(c, true, false)
		}()
		res, code := apply(base("2.9.x"))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, true, res["ready"])
		assert.Equal(t, "v2.9.5@sha256:4cc5", res["last_applied_revision"])
		assert.Len(t, res["components"], 1)
	})

	t.Run("a second run sends no write", func(t *testing.T) {
		writes := c.Writes()
		res, code := apply(base("2.9.x"))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, writes, c.Writes())
	})

	t.Run("a changed spec: the diff in check mode, then applied; not Ready in time says why", func(t *testing.T) {
		res, code := apply(check(base("2.10.x")))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		diff := res["diff"].(map[string]any)
		assert.Contains(t, diff["before"], "version: 2.9.x")
		assert.Contains(t, diff["after"], "version: 2.10.x")

		args := base("2.10.x")
		args["wait_timeout"] = 1
		res, code = apply(args)
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "FluxInstance flux-system/flux not Ready after 1s: Ready=Unknown Progressing: generation 2 not yet observed (at 1)")
		assert.NotEmpty(t, res["conditions"])
	})

	t.Run("no progress: a reconcile is requested of the operator, which moves it on", func(t *testing.T) {
		go func() { // the operator, once asked
			for c.Object(instanceGVR, "flux-system", "flux").GetAnnotations()[kube.ReconcileRequestedAt] == "" {
				time.Sleep(50 * time.Millisecond)
			}
			markReady(c, true, false)
		}()
		args := base("2.10.x")
		args["wait_timeout"], args["reconcile_stalled_after"], args["_ansible_verbosity"] = 30, 1, 1
		res, code := apply(args)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["ready"])
		assert.Equal(t, []any{"FluxInstance/flux-system/flux"}, res["reconciles_requested"])
		assert.Contains(t, fmt.Sprint(res["progress"]), "requested a reconcile of FluxInstance/flux-system/flux: its status has not changed for 1s (Ready=Unknown Progressing: generation 2 not yet observed (at 1))")
	})

	t.Run("Stalled is terminal", func(t *testing.T) {
		markReady(c, false, true)
		args := base("2.10.x")
		args["wait_timeout"] = 60
		start := time.Now()
		res, code := apply(args)
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "FluxInstance flux-system/flux is stalled: BuildFailed: no such version")
		assert.Less(t, time.Since(start), 10*time.Second)
	})

	t.Run("an instance Flux adopted is left alone, also by state=absent", func(t *testing.T) {
		obj := c.Object(instanceGVR, "flux-system", "flux")
		obj.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/name": "flux-system"})
		c.Put(obj)
		writes := c.Writes()
		res, code := apply(base("2.11.x"))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["adopted"])
		assert.Equal(t, false, res["changed"])
		res, code = apply(map[string]any{"state": "absent"})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["adopted"])
		assert.Contains(t, res["warnings"].([]any)[0], "left alone, not deleted")
		assert.Equal(t, writes, c.Writes())
	})

	t.Run("state absent: check mode deletes nothing, then it is gone", func(t *testing.T) {
		res, code := apply(check(map[string]any{"state": "absent", "force": true}))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.NotNil(t, c.Object(instanceGVR, "flux-system", "flux"))
		res, code = apply(map[string]any{"state": "absent", "force": true, "uninstall": false})
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Nil(t, c.Object(instanceGVR, "flux-system", "flux"))
		res, _ = apply(map[string]any{"state": "absent"})
		assert.Equal(t, false, res["changed"])
	})
}

// TestDecideRemoval: what state=absent does to the instance as read.
func TestDecideRemoval(t *testing.T) {
	instance := func(labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: definition("2.x")}
		u.SetLabels(labels)
		return u
	}
	adopted := instance(map[string]string{"kustomize.toolkit.fluxcd.io/name": "flux-system"})
	for _, tc := range []struct {
		name      string
		current   *unstructured.Unstructured
		force     bool
		deletes   bool
		adoptedBy string
	}{
		{name: "none: nothing to do", current: nil},
		{name: "ours: deleted", current: instance(nil), deletes: true},
		{name: "adopted by Flux: left alone", current: adopted, adoptedBy: "kustomize.toolkit.fluxcd.io/name=flux-system"},
		{name: "adopted, forced: deleted", current: adopted, force: true, deletes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decideRemoval(args{Force: tc.force}, tc.current)
			assert.Equal(t, tc.deletes, p.current != nil, "deletes")
			assert.Equal(t, tc.adoptedBy, p.adoptedBy)
		})
	}
}
