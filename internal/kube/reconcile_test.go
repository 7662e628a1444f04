package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNudgerRequestsWhatShowsNoProgress(t *testing.T) {
	type step struct {
		at    time.Duration // since the start
		state string
		want  bool
	}
	for _, tc := range []struct {
		name  string
		after time.Duration
		steps []step
	}{
		{"no request before After", 60 * time.Second, []step{{0, "a", false}, {59 * time.Second, "a", false}, {60 * time.Second, "a", true}}},
		{"progress starts the wait again", 60 * time.Second, []step{{0, "a", false}, {50 * time.Second, "b", false}, {100 * time.Second, "b", false}, {110 * time.Second, "b", true}}},
		{"requests After apart, at most three", 10 * time.Second, []step{
			{0, "a", false}, {10 * time.Second, "a", true}, {15 * time.Second, "a", false}, {20 * time.Second, "a", true},
			{30 * time.Second, "a", true}, {40 * time.Second, "a", false}, {90 * time.Second, "a", false}}},
		{"the cap counts across progress", 10 * time.Second, []step{
			{0, "a", false}, {10 * time.Second, "a", true}, {11 * time.Second, "b", false}, {21 * time.Second, "b", true},
			{22 * time.Second, "c", false}, {32 * time.Second, "c", true}, {33 * time.Second, "d", false}, {60 * time.Second, "d", false}}},
		{"0 never requests", 0, []step{{0, "a", false}, {time.Hour, "a", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			now := start
			n := Nudger{After: tc.after, Now: func() time.Time { return now }}
			for _, s := range tc.steps {
				now = start.Add(s.at)
				assert.Equal(t, s.want, n.Due("Kustomization/flux-system/apps", s.state), "at %s, state %s", s.at, s.state)
			}
		})
	}
}

func TestStatusStateIgnoresTheRequest(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "apps", "generation": int64(1)},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "Unknown", "reason": "Progressing"}}},
	}}
	before := StatusState(obj)
	obj.SetAnnotations(map[string]string{ReconcileRequestedAt: "now"})
	assert.Equal(t, before, StatusState(obj), "the request is not progress")
	_ = unstructured.SetNestedField(obj.Object, "now", "status", "lastHandledReconcileAt")
	assert.NotEqual(t, before, StatusState(obj), "the controller handling it is")
	obj.SetGeneration(2)
	assert.Contains(t, StatusState(obj), "2 ")
}
