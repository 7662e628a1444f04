package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func fluxStyle(generation int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fluxcd.controlplane.io/v1", "kind": "FluxInstance",
		"metadata": map[string]any{"name": "flux", "namespace": "flux-system", "generation": generation}, "spec": map[string]any{}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func cond(typ, status, reason string, observed int64) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": reason + " message", "observedGeneration": observed}
}

func TestReadinessOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		ready   bool
		status  string
		reason  string
		stalled bool
	}{
		// kstatus calls this one Current; a wait on it must go on.
		{"just applied, no status yet", fluxStyle(1, nil), false, "Unknown", "Progressing", false},
		{"Ready for this generation", fluxStyle(1, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "True", "Succeeded", 1)}}), true, "True", "Succeeded", false},
		{"Ready for an older generation", fluxStyle(2, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "True", "Succeeded", 1)}}), false, "Unknown", "Progressing", false},
		{"Ready, the condition older than the status", fluxStyle(2, map[string]any{"observedGeneration": int64(2), "conditions": []any{cond("Ready", "True", "Succeeded", 1)}}), false, "Unknown", "Progressing", false},
		{"failing", fluxStyle(1, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "False", "BuildFailed", 1)}}), false, "False", "BuildFailed", false},
		{"stalled for this generation", fluxStyle(1, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "False", "BuildFailed", 1), cond("Stalled", "True", "InvalidPath", 1)}}), false, "False", "BuildFailed", true},
		{"stalled for an older generation", fluxStyle(2, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Stalled", "True", "InvalidPath", 1)}}), false, "Unknown", "Progressing", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ReadinessOf(tc.obj)
			assert.Equal(t, tc.ready, r.Ready)
			assert.Equal(t, tc.status, r.Status)
			assert.Equal(t, tc.reason, r.Reason)
			_, stalled := StalledOf(tc.obj)
			assert.Equal(t, tc.stalled, stalled)
		})
	}
	suspended := fluxStyle(1, nil)
	suspended.Object["spec"] = map[string]any{"suspend": true}
	assert.True(t, ReadinessOf(suspended).Suspended)
}
