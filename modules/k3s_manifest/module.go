package k3smanifest

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// module is k3s_manifest.
var module = &ansible.Module{
	Name:             "k3s_manifest",
	ShortDescription: "Keep a manifest in a k3s server's auto-deploy directory",
	Description: []string{
		"Writes C(<data_dir>/server/manifests/<name>.yaml) on a k3s server, which k3s applies at start and whenever the file changes (k3s's auto-deploying manifests); role k8s_cluster places kube-vip there this way (C(k8s_cluster_api_vip)).",
		"The content must be YAML documents each with C(apiVersion), C(kind) and C(metadata.name), as k3s's deploy controller needs; anything else is refused before the file is touched. Written atomically, 0600 root; idempotent; C(--check --diff) shows the change.",
		"With C(state=absent) the file is removed; k3s then stops applying it but leaves the objects it made (delete them with kubectl), as k3s does.",
		"A Go binary: the node needs no Python.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Platforms: "linux",
	Examples: `
- name: Deploy a ConfigMap with k3s
  gitops.k3s_flux.k3s_manifest:
    name: cluster-info
    content: |
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cluster-info
        namespace: kube-system
      data:
        site: home
  become: true
`,
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "name", Required: true, Description: []string{"The file's name without C(.yaml): lowercase letters, digits and C(-)."}},
		{Name: "content", Description: []string{"The manifest: YAML documents separated by C(---). Required with C(state=present)."}},
		{Name: "state", Default: "present", Choices: []any{"present", "absent"}, Description: []string{"Whether the file is there."}},
		{Name: "data_dir", Type: ansible.TypePath, Default: k3snode.DefaultPaths.DataDir, Description: []string{"k3s's C(data-dir)."}},
	},
		RequiredIf: []ansible.RequiredIf{{Key: "state", Value: "present", Requirements: []string{"content"}}},
	},
	Returns: []ansible.Return{
		{Name: "path", Description: []string{"The manifest's file."}, Returned: "always", Type: "str", Sample: "/var/lib/rancher/k3s/server/manifests/kube-vip.yaml"},
		{Name: "objects", Description: []string{"The objects the manifest holds, as C(kind/namespace/name) (C(kind/name) for a cluster-wide one)."}, Returned: "with state=present", Type: "list", Sample: []any{"DaemonSet/kube-system/kube-vip-ds"}},
	},
}
