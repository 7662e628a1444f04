package nodedrain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

type args struct {
	kube.Connection
	Name          string        `json:"name"`
	State         string        `json:"state"`
	DeleteOptions deleteOptions `json:"delete_options"`
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
	c := clients.Typed
	node, pods, err := read(ctx, c, a)
	if err != nil {
		return nil, err
	}
	p, err := decide(a, node, pods)
	if err != nil {
		return nil, err
	}
	res := p.result(a)
	if req.CheckMode || !res.Changed {
		return res, nil
	}
	return res, p.apply(ctx, req, c, a)
}

// read is what the decision needs: the Node (nil when there is none) and,
// for a drain, the Pods on it. Nothing changes.
func read(ctx context.Context, c kubernetes.Interface, a args) (*corev1.Node, []corev1.Pod, error) {
	node, err := c.CoreV1().Nodes().Get(ctx, a.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get node %s: %w", a.Name, err)
	}
	if a.State != "drain" && a.State != "absent" {
		return node, nil, nil
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", a.Name).String()})
	if err != nil {
		return nil, nil, fmt.Errorf("list the pods on node %s: %w", a.Name, err)
	}
	return node, pods.Items, nil
}

// drainPlan is what a run does to the Node, decided before anything changes.
type drainPlan struct {
	node *corev1.Node // nil: there is no such Node, and state absent asks for none
	// setUnschedulable is whether the Node's spec.unschedulable is to be
	// set, to unschedulable.
	setUnschedulable, unschedulable bool
	pods                            sorting // the Pods to evict, those left and those refused
	delete                          bool
}

// decide is the plan for the Node and its Pods as read: a Node that is
// missing, or a Pod the options refuse, fails before anything is done.
func decide(a args, node *corev1.Node, pods []corev1.Pod) (drainPlan, error) {
	if node == nil {
		if a.State == "absent" {
			return drainPlan{}, nil
		}
		return drainPlan{}, fmt.Errorf("no Node named %s", a.Name)
	}
	p := drainPlan{node: node, unschedulable: a.State != "uncordon", delete: a.State == "absent"}
	p.setUnschedulable = node.Spec.Unschedulable != p.unschedulable
	if a.State == "drain" || a.State == "absent" {
		p.pods = sortPods(pods, a.DeleteOptions)
		if len(p.pods.Refused) > 0 {
			return drainPlan{}, fmt.Errorf("cannot drain node %s, nothing done: %s", a.Name, strings.Join(p.pods.Refused, "; "))
		}
	}
	return p, nil
}

// changed says whether carrying the plan out changes anything.
func (p drainPlan) changed() bool {
	return p.setUnschedulable || len(p.pods.Evict) > 0 || p.delete
}

// result is the plan as the module reports it: changed, the diff of the
// Node and the Pods it evicts, the Node's state afterwards.
func (p drainPlan) result(a args) *ansible.Result {
	res := result(p.changed(), p.node != nil && p.unschedulable, p.pods)
	if res.Changed {
		after := describe(a.Name, p.unschedulable, nil)
		if p.delete {
			after = fmt.Sprintf("node %s: absent\n", a.Name)
		}
		res.Diff = []ansible.Diff{{Before: describe(a.Name, p.node.Spec.Unschedulable, podIDs(p.pods.Evict)), After: after}}
	}
	return res
}

// apply carries the plan out: cordon (or uncordon), evict, then delete.
func (p drainPlan) apply(ctx context.Context, req *ansible.Request, c kubernetes.Interface, a args) error {
	if p.setUnschedulable {
		if err := setUnschedulable(ctx, c, a.Name, p.unschedulable); err != nil {
			return err
		}
	}
	if len(p.pods.Evict) > 0 {
		if err := drain(ctx, req, c, a, p.pods.Evict); err != nil {
			return err
		}
	}
	if p.delete {
		return deleteNode(ctx, req, c, a, p.node)
	}
	return nil
}

// deleteNode deletes the drained Node and waits until it is gone: k3s
// holds a server's Node with a finalizer until its etcd member is removed.
func deleteNode(ctx context.Context, req *ansible.Request, c kubernetes.Interface, a args, node *corev1.Node) error {
	err := c.CoreV1().Nodes().Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &node.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", a.Name, err)
	}
	var finalizers []string
	done, err := kube.Poll(ctx, 250*time.Millisecond, time.Duration(a.DeleteOptions.WaitTimeout)*time.Second, func(ctx context.Context) (bool, error) {
		n, err := c.CoreV1().Nodes().Get(ctx, a.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			finalizers = n.Finalizers
		}
		return false, err
	}, kube.Reporter(req.Progress, func() { req.Progress("waiting for node %s to go: finalizers %v", a.Name, finalizers) }))
	if done {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete node %s: %w", a.Name, err)
	}
	return fmt.Errorf("node %s deleted but still there after %ds, held by finalizers %v (k3s removes a server's etcd member first: is k3s running on another server?)", a.Name, a.DeleteOptions.WaitTimeout, finalizers)
}

// result is the module's result: the Node cordoned or not afterwards, the
// Pods evicted and the Pods left (lists, never null).
func result(changed, unschedulable bool, s sorting) *ansible.Result {
	res := &ansible.Result{Changed: changed}
	res.Set("unschedulable", unschedulable)
	res.Set("evicted", podIDs(s.Evict))
	res.Set("left", append([]string{}, s.Left...))
	return res
}

func setUnschedulable(ctx context.Context, c kubernetes.Interface, name string, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := c.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		verb := "cordon"
		if !on {
			verb = "uncordon"
		}
		return fmt.Errorf("%s node %s: %w", verb, name, err)
	}
	return nil
}

// drain evicts (or deletes) each Pod, retrying evictions a
// PodDisruptionBudget holds back, then waits until every one is gone.
// Both share delete_options.wait_timeout.
func drain(ctx context.Context, req *ansible.Request, c kubernetes.Interface, a args, pods []corev1.Pod) error {
	o := a.DeleteOptions
	ctx, cancel := context.WithTimeout(ctx, time.Duration(o.WaitTimeout)*time.Second)
	defer cancel()
	del := metav1.DeleteOptions{}
	if o.TerminateGracePeriod != nil {
		grace := int64(*o.TerminateGracePeriod)
		del.GracePeriodSeconds = &grace
	}
	pending := append([]corev1.Pod{}, pods...)
	for {
		var held []corev1.Pod
		var last error
		for _, p := range pending {
			if p.DeletionTimestamp != nil {
				continue
			}
			if err := evict(ctx, c, p, del, o.DisableEviction); err != nil {
				if !apierrors.IsTooManyRequests(err) && !kube.IsTransient(err) {
					return fmt.Errorf("drain node %s: evict pod %s: %w", a.Name, podID(p), err)
				}
				held, last = append(held, p), fmt.Errorf("pod %s: %w", podID(p), err)
			}
		}
		if len(held) == 0 {
			break
		}
		req.Progress("drain %s: evictions held back by a PodDisruptionBudget: %v", a.Name, last)
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain node %s: not done after %ds: %s", a.Name, o.WaitTimeout, heldBack(held, last))
		case <-time.After(time.Duration(o.WaitSleep) * time.Second):
		}
		pending = held
	}
	return waitGone(ctx, req, c, a, pods)
}

func evict(ctx context.Context, c kubernetes.Interface, p corev1.Pod, del metav1.DeleteOptions, deleteInstead bool) error {
	del.Preconditions = &metav1.Preconditions{UID: &p.UID}
	var err error
	if deleteInstead {
		err = c.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, del)
	} else {
		err = c.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, DeleteOptions: &del})
	}
	// Gone already, or replaced by a Pod of the same name: nothing to evict.
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func heldBack(held []corev1.Pod, last error) string {
	return fmt.Sprintf("%d pod(s) still held back by a PodDisruptionBudget (%s); last: %v", len(held), strings.Join(podIDs(held), ", "), last)
}

// waitGone polls until no evicted Pod remains (a Pod of the same name with
// another UID is a replacement, not the one evicted).
func waitGone(ctx context.Context, req *ansible.Request, c kubernetes.Interface, a args, pods []corev1.Pod) error {
	var left []string
	check := func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, p := range pods {
			cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if cur.UID == p.UID {
				left = append(left, podID(p))
			}
		}
		return len(left) == 0, nil
	}
	done, err := kube.Poll(ctx, 500*time.Millisecond, time.Duration(a.DeleteOptions.WaitTimeout)*time.Second, check, kube.Reporter(req.Progress, func() {
		req.Progress("drain %s: waiting for %v to terminate", a.Name, left)
	}))
	if done {
		return nil
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("drain node %s: evicted pods still there after %ds: %s", a.Name, a.DeleteOptions.WaitTimeout, strings.Join(left, ", "))
	}
	return fmt.Errorf("drain node %s: %w", a.Name, err)
}
