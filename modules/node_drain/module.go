package nodedrain

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

var module = &ansible.Module{
	Name:             "node_drain",
	ShortDescription: "Cordon, drain, uncordon or remove a Node, respecting PodDisruptionBudgets",
	Description: []string{
		"V(cordon) marks the Node unschedulable. V(drain) cordons it and then evicts its Pods as C(kubectl drain) does: through the Eviction API, so a PodDisruptionBudget that allows no disruption now holds the eviction back, retried until O(delete_options.wait_timeout); then it waits until the evicted Pods are gone. V(uncordon) makes it schedulable again.",
		"Mirror (static) Pods are left alone; DaemonSet Pods are left when O(delete_options.ignore_daemonsets) is true and refused otherwise; a Pod no controller owns is refused unless O(delete_options.force); a Pod with an emptyDir volume is refused unless O(delete_options.delete_emptydir_data). A refusal names every such Pod and changes nothing (the Node is not cordoned either).",
		"Idempotent: a cordoned Node with nothing left to evict is unchanged. In check mode nothing is written; the result lists the Pods a real run would evict, and the diff shows the Node before and after.",
		"Role k8s_cluster drains each node this way before its rolling upgrade and uncordons it once it is Ready on the new version; playbook remove_node drains and deletes a node with V(absent). Named and shaped after kubernetes.core.k8s_drain.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Spec: ansible.Spec{
		Options: append(kube.ConnectionOptions(),
			ansible.Option{Name: "name", Required: true, Format: ansible.FormatObjectName,
				Description: []string{"The Node."}},
			ansible.Option{Name: "state", Default: "drain", Choices: []any{"drain", "cordon", "uncordon", "absent"},
				Description: []string{"What to do with the Node. V(absent) drains it as V(drain) does, then deletes the Node object and waits until it is gone (k3s holds a server's Node until it removed its etcd member); a missing Node is already absent."}},
			ansible.Option{Name: "delete_options", Type: ansible.TypeDict, Default: map[string]any{},
				Description: []string{"How V(drain) treats the Node's Pods."},
				Options: []ansible.Option{
					{Name: "ignore_daemonsets", Type: ansible.TypeBool, Default: false,
						Description: []string{"Leave DaemonSet Pods (their controller would put them back at once). When false, a Node running one is refused."}},
					{Name: "delete_emptydir_data", Type: ansible.TypeBool, Default: false,
						Description: []string{"Evict Pods with emptyDir volumes, whose data is lost. When false, such a Pod is refused."}},
					{Name: "force", Type: ansible.TypeBool, Default: false,
						Description: []string{"Evict Pods that no controller owns (nothing recreates them). When false, such a Pod is refused."}},
					{Name: "disable_eviction", Type: ansible.TypeBool, Default: false,
						Description: []string{"Delete the Pods instead of evicting them: PodDisruptionBudgets are bypassed."}},
					{Name: "terminate_grace_period", Type: ansible.TypeInt,
						Description: []string{"Grace period in seconds given to each Pod; the Pod's own when unset."}},
					{Name: "wait_timeout", Type: ansible.TypeInt, Default: 300, Positive: true,
						Description: []string{"Seconds to keep retrying evictions a PodDisruptionBudget holds back and to wait until the Pods are gone."}},
					{Name: "wait_sleep", Type: ansible.TypeInt, Default: 5, Positive: true,
						Description: []string{"Seconds between retries of a held-back eviction."}},
				}},
		),
	},
	Examples: `
- name: Drain node2 before its upgrade
  gitops.k3s_flux.node_drain:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    name: node2
    delete_options:
      ignore_daemonsets: true
      delete_emptydir_data: true
      wait_timeout: 600

- name: Put it back in service
  gitops.k3s_flux.node_drain:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    name: node2
    state: uncordon
`,
	Returns: []ansible.Return{
		{Name: "unschedulable", Description: []string{"Whether the Node is cordoned after the task (in check mode: would be); with V(absent), until it was deleted."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "evicted", Description: []string{"The Pods evicted (in check mode: that would be), as namespace/name."}, Returned: "always", Type: "list", Sample: []any{"default/web-7d9c-abcde"}},
		{Name: "left", Description: []string{"The Pods left on the Node and why, as C(namespace/name (DaemonSet)) or C(namespace/name (mirror Pod))."}, Returned: "always", Type: "list", Sample: []any{"kube-system/svclb-traefik-x2x9k (DaemonSet)"}},
	},
}
