package k3skubeconfig

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

var module = &ansible.Module{
	Name:             "k3s_kubeconfig",
	ShortDescription: "Write a k3s cluster's admin kubeconfig on the controller, pointed at its API endpoint",
	Description: []string{
		"Takes the admin kubeconfig k3s writes on a server (C(/etc/rancher/k3s/k3s.yaml), as M(gitops.k3s_flux.k3s_node_info) returns it), points every cluster in it at C(server) and renames what k3s calls C(default) (cluster, user, context, current context) to C(cluster_name).",
		"Writes it to C(dest) atomically, mode 0600, creating a missing directory with mode 0700 and a C(.gitignore) in it that keeps everything there out of git (the directory is often inside the GitOps repository, where a C(git add -A) would publish cluster-admin credentials); an existing file with other content is replaced (kept beside it with C(backup)), one with the same content but another mode gets 0600.",
		"With C(merge), C(dest) is a kubeconfig of the user's own (such as C(~/.kube/config)): the cluster, user and context named C(cluster_name) are added or replaced, everything else in it is kept (other contexts, their credentials, preferences), and the current context is set to C(cluster_name) only when the file has none. The file is written whole again, as C(kubectl config) writes it (comments are not kept); before the first merge into an existing file (one holding none of the entries this module marks), it is copied beside itself as C(<dest>.<pid>.<timestamp>~), mode 0600, returned as C(backup_file).",
		"A merge touches only what it wrote: each cluster, user and context it writes carries a kubeconfig extension named C(gitops.k3s_flux) (C(managed-by: gitops.k3s_flux)), which kubectl and client-go keep. An entry named C(cluster_name) without it is the user's: it is never replaced or removed, and a merge that would replace it is refused, naming it. Entries an earlier version of the collection wrote carry no mark; they are taken over (marked, with a warning) when the cluster has the same API endpoint and CA as the one written, the user holds only a client certificate and key (as k3s's admin does) and the context joins those two; any other is refused.",
		"A merge refuses a C(dest) that is not a kubeconfig and leaves it byte for byte as it was: kubectl takes any mapping for one and drops what it does not know, a merge is stricter since it writes the file whole again. A kubeconfig here is an empty file, or one YAML or JSON mapping whose top-level keys are all a kubeconfig's (C(apiVersion), C(kind), C(clusters), C(contexts), C(users), C(current-context), C(preferences), C(extensions)), with C(kind=Config) (C(apiVersion=v1) when given) or, without a kind, at least one of C(clusters), C(contexts), C(users), C(current-context), C(preferences); and that client-go reads. A compose file, a package.json or C(notes: really) is not.",
		"C(state=absent) takes out the cluster, user and context named C(cluster_name) that carry the mark, and nothing else: an unmarked one stays (a warning names it), the current context is unset only when it was the context removed, and another context that used the removed cluster or user is left as it is, with a warning naming it. A file without them is left as it is.",
		"Role k8s_cluster runs it on the controller after the first controller's kubeconfig was read, and with C(merge) for C(k8s_cluster_kubeconfig_merge); playbook reset takes the context out again.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Notes: []string{
		"The diff shows the kubeconfig with its credentials replaced by C(<redacted>): a user's client key, token and password, an auth-provider's id, refresh and access tokens and client secret, and every arg and every C(env) value of an exec plugin (kubelogin takes its client secret in C(--oidc-client-secret=...)). With C(merge) it shows only the entries named C(cluster_name) (and the current context when it is that one), never the rest of the user's file. An existing file is parsed to find the credentials whatever its style (rendered again from the parse when the line-by-line redaction would leave one, C(<not shown: does not parse>) when it does not parse); those values are masked in every result (an exec C(env) value when its name says it is a secret, an exec arg when the flag's name does).",
		"A C(dest) that is a symbolic link is followed: the file it points to is written.",
	},
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "content", NoLog: true,
			Description: []string{"The admin kubeconfig, as k3s wrote it on a server. Required with C(state=present)."}},
		{Name: "dest", Type: ansible.TypePath, Required: true,
			Description: []string{"Where to write it on the controller."}},
		{Name: "server",
			Description: []string{"The API endpoint every cluster in it is pointed at, an C(https://) URL (k3s writes C(https://127.0.0.1:6443)). Default: as written."}},
		{Name: "cluster_name",
			Description: []string{"The name of the cluster, user and context that k3s calls C(default). Default: as written."}},
		{Name: "merge", Type: ansible.TypeBool, Default: false,
			Description: []string{"Merge into C(dest) (a kubeconfig with other contexts) instead of replacing it: only the cluster, user and context named C(cluster_name), which must be set, are written, each marked as this module's. A C(dest) that is not a kubeconfig, or that holds an entry of that name this module did not write, is refused and left as it is."}},
		{Name: "state", Default: "present", Choices: []any{"present", "absent"},
			Description: []string{"C(absent) takes the cluster, user and context named C(cluster_name) that this module wrote (marked) out of C(dest) (with C(merge) only: never a whole file); the current context, if it was that one, is unset."}},
		{Name: "backup", Type: ansible.TypeBool, Default: false,
			Description: []string{"Keep a file with other content beside it, as C(<dest>.<pid>.<timestamp>~), before replacing it. With C(merge), before every change (the first merge into a file keeps it anyway)."}},
	},
		RequiredIf: []ansible.RequiredIf{
			{Key: "state", Value: "present", Requirements: []string{"content"}},
			{Key: "merge", Value: true, Requirements: []string{"cluster_name"}},
			{Key: "state", Value: "absent", Requirements: []string{"cluster_name"}},
		}},
	Examples: `
- name: Read the kubeconfig on the first server
  gitops.k3s_flux.k3s_node_info:
    return_kubeconfig: true
  register: first
  become: true
  no_log: true

- name: Write it on the controller
  gitops.k3s_flux.k3s_kubeconfig:
    content: "{{ first.kubeconfig }}"
    dest: "{{ playbook_dir }}/.generated/kubeconfig"
    server: https://10.0.0.11:6443
    cluster_name: homelab
    backup: true
  delegate_to: localhost

- name: Add it to the user's own kubeconfig as context homelab, keeping the others
  gitops.k3s_flux.k3s_kubeconfig:
    content: "{{ first.kubeconfig }}"
    dest: ~/.kube/config
    merge: true
    server: https://10.0.0.11:6443
    cluster_name: homelab
  delegate_to: localhost
`,
	Returns: []ansible.Return{
		{Name: "dest", Description: []string{"The file written (the target of a link)."}, Returned: "always", Type: "str", Sample: "/home/me/.kube/homelab"},
		{Name: "server", Description: []string{"The API endpoint of the current context's cluster."}, Returned: "always", Type: "str", Sample: "https://10.0.0.11:6443"},
		{Name: "context", Description: []string{"The current context."}, Returned: "always", Type: "str", Sample: "homelab"},
		{Name: "ignore_file", Description: []string{"The C(.gitignore) written in the directory the module made for C(dest)."}, Returned: "when the directory was made", Type: "str", Sample: "/home/me/home-ops/ansible/.generated/.gitignore"},
		{Name: "backup_file", Description: []string{"The copy of the file that was replaced or merged into, mode 0600."}, Returned: "changed, and backup or the first merge into an existing file", Type: "str", Sample: "/home/me/.kube/homelab.4242.2026-12-03@09:41:00~"},
	},
}
