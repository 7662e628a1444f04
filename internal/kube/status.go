package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

// Condition is one entry of an object's status.conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the generation the condition was set for
	// (0 when the object does not say).
	ObservedGeneration int64 `json:"observed_generation,omitempty"`
}

// Conditions reads status.conditions.
func Conditions(obj *unstructured.Unstructured) []Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	out := make([]Condition, 0, len(raw))
	for _, r := range raw {
		m, _ := r.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		gen, _ := m["observedGeneration"].(int64)
		out = append(out, Condition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message"), ObservedGeneration: gen})
	}
	return out
}

// Readiness is whether a Flux-style object is Ready: a Ready=True condition
// for the current generation. Not kstatus (sigs.k8s.io/cli-utils): measured
// with v0.37.2, status.Compute calls a FluxInstance just applied, with no
// status yet, Current, so a wait on it would end before the operator has
// looked at it; here an object without a Ready condition is not Ready.
type Readiness struct {
	Ready     bool
	Status    string // the Ready condition's status, "Unknown" when absent
	Reason    string
	Message   string
	Suspended bool
}

// ReadinessOf evaluates the Ready condition; a condition observed for an
// older generation is not Ready yet.
func ReadinessOf(obj *unstructured.Unstructured) Readiness {
	r := Readiness{Status: "Unknown", Reason: "Progressing", Message: "no Ready condition yet"}
	r.Suspended, _, _ = unstructured.NestedBool(obj.Object, "spec", "suspend")
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	for _, c := range Conditions(obj) {
		if c.Type == "Ready" {
			r.Status, r.Reason, r.Message = c.Status, c.Reason, c.Message
			if c.ObservedGeneration > 0 && (!found || c.ObservedGeneration < observed) {
				observed, found = c.ObservedGeneration, true
			}
		}
	}
	if found && observed < obj.GetGeneration() {
		r.Status, r.Reason, r.Message = "Unknown", "Progressing", fmt.Sprintf("generation %d not yet observed (at %d)", obj.GetGeneration(), observed)
	}
	r.Ready = r.Status == "True"
	return r
}

// StalledOf returns the Stalled=True condition set for the object's
// current generation, if any: Flux gives up on such an object until its
// spec changes, so a wait for it is over.
func StalledOf(obj *unstructured.Unstructured) (Condition, bool) {
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	for _, c := range Conditions(obj) {
		if c.Type != "Stalled" || c.Status != "True" {
			continue
		}
		gen := c.ObservedGeneration
		if gen == 0 && found {
			gen = observed
		}
		if gen == 0 || gen >= obj.GetGeneration() {
			return c, true
		}
	}
	return Condition{}, false
}

// RecentEvents returns the newest events about an object, oldest first,
// as "Type Reason: message" lines.
func (c *Clients) RecentEvents(ctx context.Context, namespace, kind, name string, limit int) []string {
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", name), fields.OneTermEqualSelector("involvedObject.kind", kind))
	list, err := c.Typed.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return nil
	}
	events := list.Items
	sort.Slice(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	if len(events) > limit {
		events = events[len(events)-limit:]
	}
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message)))
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
