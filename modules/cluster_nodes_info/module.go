package clusternodes

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

var module = &ansible.Module{
	Name:             "cluster_nodes_info",
	ShortDescription: "Wait until the cluster's Nodes are Ready, and report them",
	Description: []string{
		"An info module: read-only, the same in check mode. (Named C(cluster_nodes) before 0.1.0; that name redirects here.) Lists every Node with its Ready state, roles, kubelet version and internal address.",
		"With C(names), waits until each named Node exists and is Ready, and on timeout fails naming the Nodes that are missing or not Ready, with their Ready condition.",
		"With O(wait_for=registered), waits only until each named Node exists: for a cluster whose CNI Flux installs later (k3s with C(flannel-backend: none)), whose Nodes stay NotReady until then; C(not_ready) still lists them.",
		"Role k8s_cluster runs it last, with the node names k3s_config returned, so a play ends only when every inventory host has joined.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "none",
	Spec: ansible.Spec{
		Options: append(append(kube.ConnectionOptions(), kube.WaitOptions(true, "Wait for the C(names) to be Ready. When false, report once and fail at once if one is not.")...),
			ansible.Option{Name: "names", Type: ansible.TypeList, Elements: ansible.TypeStr, Format: ansible.FormatObjectName, Default: []any{},
				Description: []string{"Nodes that must exist and be Ready."}},
			ansible.Option{Name: "wait_for", Default: "ready", Choices: []any{"ready", "registered"},
				Description: []string{"V(ready): the O(names) must be Ready. V(registered): they must exist, Ready or not."}},
			ansible.Option{Name: "version",
				Description: []string{"The kubelet version the O(names) must also report, such as C(v1.36.2+k3s1): after an upgrade, a Node counts only once it runs the new version (role k8s_cluster's rolling upgrade waits this way). Empty: any version."}},
		),
	},
	Examples: `
- name: Wait until every node has joined
  gitops.k3s_flux.cluster_nodes_info:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    names: [node1, node2, node3]
  register: cluster

- name: Show them
  ansible.builtin.debug:
    msg: "{{ cluster.nodes | map(attribute='name') }}"
`,
	Returns: []ansible.Return{
		{Name: "nodes", Description: []string{"Each Node: name, ready, roles, version (kubelet), internal_ip, reason and message of its Ready condition."}, Returned: "always", Type: "list",
			Sample: []any{map[string]any{"name": "node1", "ready": true, "roles": []any{"control-plane", "etcd", "master"}, "version": "v1.36.2+k3s1", "internal_ip": "10.0.0.11", "reason": "KubeletReady", "message": "kubelet is posting ready status"}}},
		{Name: "summary", Description: []string{"One line per Node: name, Ready or NotReady, roles, version, internal address."}, Returned: "always", Type: "list",
			Sample: []any{"node1 Ready control-plane,etcd,master v1.36.2+k3s1 10.0.0.11", "node2 Ready <none> v1.36.2+k3s1 10.0.0.12"}},
		{Name: "missing", Description: []string{"Names asked for that have no Node."}, Returned: "always", Type: "list", Sample: []any{}},
		{Name: "not_ready", Description: []string{"Names asked for whose Node is not Ready."}, Returned: "always", Type: "list", Sample: []any{}},
		{Name: "outdated", Description: []string{"Names asked for whose Node runs another kubelet version than O(version)."}, Returned: "always", Type: "list", Sample: []any{}},
	},
}
