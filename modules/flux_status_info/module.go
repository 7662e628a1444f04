package fluxstatus

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

var module = &ansible.Module{
	Name:             "flux_status_info",
	ShortDescription: "Report what Flux reconciles: sources, Kustomizations, HelmReleases and what is failing",
	Description: []string{
		"An info module: read-only, the same in check mode, except that a wait may ask Flux to reconcile what shows no progress (C(reconcile_stalled_after)), as C(flux reconcile) does. (Named C(flux_status) before 0.1.0; that name redirects here.) Lists every Flux source (GitRepository, OCIRepository, HelmRepository, Bucket) with its Ready state and revision, every Kustomization and HelmRelease with its Ready state, reason and C(dependsOn), and the list of what is not Ready.",
		"With C(wait), waits until nothing is failing (and, with C(wait_for_revision), until the source serves that revision), and on timeout fails with the last conditions and recent events of what is still failing.",
		"This is what C(just fx sources) and C(just fx failing) show, as results a play checks with C(ansible.builtin.assert).",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "none",
	Notes: []string{
		"An object counts as Ready when its Ready condition is True for its current generation (as kstatus reads it). Suspended objects are reported but do not count as failing.",
		"When Flux's CRDs are not installed, the lists are empty and C(flux_installed) is false.",
		"Nothing to check is not success: when C(source) does not exist, C(ready) is false. With C(wait), a FluxInstance in the source's namespace that has no C(spec.sync), or syncs under another name, fails the task at once naming the source to use; so does an object that Flux reports Stalled for its current generation (Flux will not retry it until its spec changes).",
		"A blip of the API server (unreachable, 429, 5xx, an etcd leader change) during a wait is retried until C(wait_timeout).",
		"With a kubeconfig that may read but not patch, a wait that would ask Flux to reconcile (C(reconcile_stalled_after)) warns once and goes on waiting without asking.",
	},
	Spec: ansible.Spec{
		Options: append(append(kube.ConnectionOptions(), kube.WaitOptions(false, "Wait until nothing is failing (and the revision is served).")...),
			kube.ReconcileOption("each object that is not Ready (and the source, while it does not serve C(wait_for_revision))"),
			ansible.Option{Name: "namespace", Format: ansible.FormatNamespace, Description: []string{"Only report objects in this namespace. Default: all namespaces."}},
			ansible.Option{Name: "source", Default: "flux-system/flux-system", Format: ansible.FormatNamespacedName,
				Description: []string{"The source C(wait_for_revision) applies to, as C(namespace/name) (any source kind)."}},
			ansible.Option{Name: "wait_for_revision",
				Description: []string{"A revision the source must serve: a commit SHA (full or at least 7 characters), or a full Flux revision such as C(main@sha1:<sha>)."}},
		),
	},
	Examples: `
- name: Verify the hand-off
  gitops.k3s_flux.flux_status_info:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    wait: true
    wait_for_revision: "{{ pushed_commit }}"
  register: flux

- name: Nothing is failing
  ansible.builtin.assert:
    that: flux.failing | length == 0
`,
	Returns: []ansible.Return{
		{Name: "flux_installed", Description: []string{"Whether Flux's CRDs exist."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "ready", Description: []string{"The source exists, nothing is failing and, with C(wait_for_revision), the source serves that revision."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "sources", Description: []string{"Each source: kind, namespace, name, ready, reason, message, revision, suspended."}, Returned: "always", Type: "list",
			Sample: []any{map[string]any{"kind": "GitRepository", "namespace": "flux-system", "name": "flux-system", "ready": true, "reason": "Succeeded", "revision": "main@sha1:4f1c9a..."}}},
		{Name: "kustomizations", Description: []string{"Each Kustomization: namespace, name, ready, reason, message, revision (last applied), depends_on, suspended."}, Returned: "always", Type: "list",
			Sample: []any{map[string]any{"namespace": "flux-system", "name": "apps", "ready": false, "reason": "DependencyNotReady", "depends_on": []any{"flux-system/infra-configs"}}}},
		{Name: "helmreleases", Description: []string{"Each HelmRelease, as for Kustomizations."}, Returned: "always", Type: "list", Sample: []any{}},
		{Name: "failing", Description: []string{"What is not Ready, one line each: C(Kind/namespace/name: reason: message)."}, Returned: "always", Type: "list", Sample: []any{"Kustomization/flux-system/apps: DependencyNotReady: dependency 'flux-system/infra-configs' is not ready"}},
		{Name: "reconciles_requested", Description: []string{"Each reconcile the wait requested (see C(reconcile_stalled_after)), as C(Kind/namespace/name), in order."}, Returned: "always", Type: "list", Sample: []any{"Kustomization/flux-system/apps"}},
		{Name: "events", Description: []string{"Recent events of each failing object, when a wait timed out."}, Returned: "failure after a wait", Type: "dict", Sample: map[string]any{}},
	},
}
