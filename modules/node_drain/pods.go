package nodedrain

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type deleteOptions struct {
	IgnoreDaemonsets     bool `json:"ignore_daemonsets"`
	DeleteEmptydirData   bool `json:"delete_emptydir_data"`
	Force                bool `json:"force"`
	DisableEviction      bool `json:"disable_eviction"`
	TerminateGracePeriod *int `json:"terminate_grace_period"`
	WaitTimeout          int  `json:"wait_timeout"`
	WaitSleep            int  `json:"wait_sleep"`
}

// sorting is the Node's Pods sorted as kubectl drain sorts them: the ones
// to evict, the ones left (and why) and the ones refused (and why).
type sorting struct {
	Evict   []corev1.Pod
	Left    []string
	Refused []string
}

const mirrorAnnotation = "kubernetes.io/config.mirror"

// sortPods decides each Pod's fate from the options, with kubectl drain's
// filters in its order: terminating Pods are only waited for, mirror Pods
// stay, finished Pods go, DaemonSet Pods stay or refuse, unmanaged and
// emptyDir Pods go only when forced.
func sortPods(pods []corev1.Pod, o deleteOptions) sorting {
	var s sorting
	for _, p := range pods {
		id := p.Namespace + "/" + p.Name
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		owner := metav1.GetControllerOf(&p)
		switch {
		case p.DeletionTimestamp != nil:
			s.Evict = append(s.Evict, p) // already going: waited for, not evicted again
		case p.Annotations[mirrorAnnotation] != "":
			s.Left = append(s.Left, id+" (mirror Pod)")
		case finished:
			s.Evict = append(s.Evict, p)
		case owner != nil && owner.Kind == "DaemonSet":
			if o.IgnoreDaemonsets {
				s.Left = append(s.Left, id+" (DaemonSet)")
			} else {
				s.Refused = append(s.Refused, id+" (DaemonSet Pod: set delete_options.ignore_daemonsets)")
			}
		case owner == nil && !o.Force:
			s.Refused = append(s.Refused, id+" (no controller owns it: set delete_options.force)")
		case hasEmptyDir(p) && !o.DeleteEmptydirData:
			s.Refused = append(s.Refused, id+" (emptyDir volume: set delete_options.delete_emptydir_data)")
		default:
			s.Evict = append(s.Evict, p)
		}
	}
	sort.Strings(s.Left)
	sort.Strings(s.Refused)
	sort.Slice(s.Evict, func(i, j int) bool { return podID(s.Evict[i]) < podID(s.Evict[j]) })
	return s
}

func hasEmptyDir(p corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

func podID(p corev1.Pod) string { return p.Namespace + "/" + p.Name }

func podIDs(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podID(p))
	}
	return out
}

// describe is the diff's text of a Node: cordoned or not, and its Pods.
func describe(name string, unschedulable bool, pods []string) string {
	state := "schedulable"
	if unschedulable {
		state = "cordoned (unschedulable)"
	}
	list := "none"
	if len(pods) > 0 {
		list = "\n  - " + strings.Join(pods, "\n  - ")
	}
	return fmt.Sprintf("node %s: %s\npods to evict: %s\n", name, state, list)
}
