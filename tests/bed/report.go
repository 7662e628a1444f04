package bed

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Report is a short account of the bed's state for a failed test: each
// process (running, restarts), the last lines of the Flux processes' logs,
// the Flux objects that are not Ready, and the Pods and Nodes that are not.
// It is short because CI shows only the end of a failed run.
func (b *Bed) Report(logLines int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	var procs []*Process
	if b.cp != nil {
		procs = append(procs, b.cp.procs...)
	}
	if b.Flux != nil {
		procs = append(procs, b.Flux.procs...)
	}
	var states []string
	for _, p := range procs {
		state := "running"
		if !p.Running() {
			state = "exited"
		}
		states = append(states, fmt.Sprintf("%s %s, %d restarts", p.Name, state, p.Restarts()))
	}
	fmt.Fprintf(&out, "processes: %s\n", strings.Join(states, "; "))
	if b.Flux != nil {
		for _, p := range b.Flux.procs {
			fmt.Fprintf(&out, "%s log, last lines:\n%s", p.Name, lastLines(p.Log, logLines, 240))
		}
	}
	kc, dc, err := b.Clients()
	if err != nil {
		fmt.Fprintf(&out, "no API client: %v\n", err)
		return out.String()
	}
	for _, gvr := range []schema.GroupVersionResource{FluxInstanceGVR, GitRepositoryGVR, KustomizationGVR} {
		list, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // the CRD may not exist yet
		}
		for _, obj := range list.Items {
			status, reason, msg, ok := conditionOf(&obj, "Ready")
			if !ok {
				msg = "no Ready condition"
			}
			if status != "True" {
				fmt.Fprintf(&out, "%s %s/%s: Ready=%s %s: %s\n", gvr.Resource, obj.GetNamespace(), obj.GetName(), status, reason, Clip(msg, 240))
			}
		}
	}
	if pods, err := kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == "Ready" && c.Status == "True")
			}
			if !ready {
				fmt.Fprintf(&out, "pod %s/%s on %q: %s, not Ready\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	}
	if nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == "Ready" && c.Status != "True" {
					fmt.Fprintf(&out, "node %s: Ready=%s %s\n", n.Name, c.Status, c.Reason)
				}
			}
		}
	}
	return out.String()
}

// lastLines is the last n lines of a file, each clipped to width.
func lastLines(path string, n, width int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("  (%v)\n", err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out strings.Builder
	for _, l := range lines[max(0, len(lines)-n):] {
		fmt.Fprintf(&out, "  %s\n", Clip(l, width))
	}
	return out.String()
}

// Clip is s cut to width bytes, marked when cut: a failure report stays short.
func Clip(s string, width int) string {
	if len(s) > width {
		return s[:width] + "…"
	}
	return s
}
