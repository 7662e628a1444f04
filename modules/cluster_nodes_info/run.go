package clusternodes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

type args struct {
	kube.Connection
	Names       []string `json:"names"`
	Wait        bool     `json:"wait"`
	WaitTimeout int      `json:"wait_timeout"`
	WaitFor     string   `json:"wait_for"`
	Version     string   `json:"version"`
}

// node is one reported Node.
type node struct {
	Name       string   `json:"name"`
	Ready      bool     `json:"ready"`
	Roles      []string `json:"roles"`
	Version    string   `json:"version"`
	InternalIP string   `json:"internal_ip"`
	Reason     string   `json:"reason"`
	Message    string   `json:"message"`
}

// report is the Nodes at one moment, against the names asked for.
type report struct {
	Nodes    []node
	Missing  []string
	NotReady []string
	Outdated []string // names whose kubelet runs another version than asked
}

// done: every name has a Node and, unless only registration is asked
// for, every one is Ready.
func (r report) done(registeredOnly bool) bool {
	return len(r.Missing) == 0 && (registeredOnly || len(r.NotReady) == 0) && len(r.Outdated) == 0
}

func run(ctx context.Context, req *ansible.Request, connect kube.Connector) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	clients, err := connect(a.Connection)
	if err != nil {
		return nil, err
	}
	var rep report
	check := func(ctx context.Context) (bool, error) {
		list, err := clients.Typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("list nodes: %w", err)
		}
		rep = compare(list.Items, a.Names, a.Version)
		return rep.done(a.WaitFor == "registered"), nil
	}
	if a.Wait {
		_, err = kube.Poll(ctx, 500*time.Millisecond, time.Duration(a.WaitTimeout)*time.Second, check, kube.Reporter(req.Progress, func() {
			req.Progress("waiting for nodes: missing %v, not Ready %v, not on %s %v", rep.Missing, rep.NotReady, a.Version, rep.Outdated)
		}))
	} else {
		_, err = check(ctx)
	}
	res := &ansible.Result{}
	if err != nil {
		return res, err
	}
	res.Set("nodes", rep.Nodes)
	res.Set("summary", summary(rep.Nodes))
	res.Set("missing", rep.Missing)
	res.Set("not_ready", rep.NotReady)
	res.Set("outdated", rep.Outdated)
	if rep.done(a.WaitFor == "registered") {
		return res, nil
	}
	return res, notReadyError(a, rep)
}

func notReadyError(a args, rep report) error {
	var why []string
	if len(rep.Missing) > 0 {
		why = append(why, fmt.Sprintf("no Node named %s (nodes: %s)", strings.Join(rep.Missing, ", "), strings.Join(names(rep.Nodes), ", ")))
	}
	for _, n := range rep.Nodes {
		if slices.Contains(rep.NotReady, n.Name) && a.WaitFor != "registered" {
			why = append(why, fmt.Sprintf("%s not Ready: %s: %s", n.Name, n.Reason, n.Message))
		}
	}
	for _, n := range rep.Nodes {
		if slices.Contains(rep.Outdated, n.Name) {
			why = append(why, fmt.Sprintf("%s runs %s, not %s", n.Name, n.Version, a.Version))
		}
	}
	if a.WaitFor == "registered" {
		return fmt.Errorf("nodes not registered after %ds: %s", a.WaitTimeout, strings.Join(why, "; "))
	}
	if a.Wait {
		return fmt.Errorf("nodes not Ready after %ds: %s", a.WaitTimeout, strings.Join(why, "; "))
	}
	return fmt.Errorf("nodes not Ready: %s", strings.Join(why, "; "))
}

// compare reports every Node and which wanted names are missing or not Ready.
// With a version, each wanted Node must also run that kubelet version.
func compare(items []corev1.Node, wanted []string, version string) report {
	rep := report{Nodes: make([]node, 0, len(items)), Missing: []string{}, NotReady: []string{}, Outdated: []string{}}
	byName := map[string]node{}
	for i := range items {
		n := toNode(&items[i])
		rep.Nodes = append(rep.Nodes, n)
		byName[n.Name] = n
	}
	sort.Slice(rep.Nodes, func(i, j int) bool { return rep.Nodes[i].Name < rep.Nodes[j].Name })
	for _, name := range wanted {
		n, ok := byName[name]
		switch {
		case !ok:
			rep.Missing = append(rep.Missing, name)
		case !n.Ready:
			rep.NotReady = append(rep.NotReady, name)
		}
		if ok && version != "" && n.Version != version {
			rep.Outdated = append(rep.Outdated, name)
		}
	}
	return rep
}

const rolePrefix = "node-role.kubernetes.io/"

func toNode(n *corev1.Node) node {
	out := node{Name: n.Name, Version: n.Status.NodeInfo.KubeletVersion, Roles: []string{}, Reason: "NoReadyCondition",
		Message: "the kubelet has not reported"}
	for label := range n.Labels {
		if role, ok := strings.CutPrefix(label, rolePrefix); ok && role != "" {
			out.Roles = append(out.Roles, role)
		}
	}
	sort.Strings(out.Roles)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
			out.Reason, out.Message = c.Reason, c.Message
		}
	}
	for _, addr := range n.Status.Addresses {
		if addr.Type == corev1.NodeInternalIP && out.InternalIP == "" {
			out.InternalIP = addr.Address
		}
	}
	return out
}

// summary is one line per node, as kubectl get nodes -o wide shows it.
func summary(nodes []node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		status, roles := "Ready", strings.Join(n.Roles, ",")
		if !n.Ready {
			status = "NotReady"
		}
		if roles == "" {
			roles = "<none>"
		}
		out = append(out, strings.Join([]string{n.Name, status, roles, n.Version, n.InternalIP}, " "))
	}
	return out
}

func names(nodes []node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
