package fluxinstance

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

var module = &ansible.Module{
	Name:             "flux_instance",
	ShortDescription: "Apply the FluxInstance (the hand-off to Flux) and wait until Flux is Ready",
	Description: []string{
		"Waits for the Flux Operator (its Deployment available, the FluxInstance CRD established), checks that the Secrets the instance needs exist, then server-side applies the FluxInstance from C(src) (for example C(flux/cluster.yaml)) or C(definition), and waits until it is Ready for its generation with the applied revision in its status.",
		"Reports the hand-off: the instance's Ready state and reason, the applied Flux revision and the installed components. On timeout it fails with the instance's conditions and recent events, not just \"timed out\".",
		"The FluxInstance is handled as an unstructured C(fluxcd.controlplane.io/v1) object.",
		"Applying is idempotent: a second run with the same definition sends no write to the API server (it compares with a server-side dry run).",
		"Check mode waits for nothing: it plans with a server-side dry run; before the FluxInstance CRD exists (the operator is not installed yet), or when the C(kubeconfig) file does not exist yet (a first run), it plans the instance from its definition with a warning. A missing required Secret is a warning in check mode and an error in a real run.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Notes: []string{
		"The operator accepts only the name C(flux); the namespace defaults to C(flux-system).",
		"Ansible applies the FluxInstance; Flux reconciles it too only when its file is inside its own sync path (M(gitops.k3s_flux.flux_repo_check) warns of that, and fails when the two differ). Once the instance carries a C(kustomize.toolkit.fluxcd.io/name) or C(helm.toolkit.fluxcd.io/name) label, it is left alone (C(adopted), with a warning), by C(state=absent) too, unless C(force=true).",
		"C(state=absent) deletes the instance: with C(uninstall=true) the operator uninstalls Flux (its finalizer deletes what it installed); with C(uninstall=false) reconciliation is disabled first, so Flux keeps running and only the instance goes.",
	},
	Spec: ansible.Spec{
		Options: append(append(kube.ConnectionOptions(), kube.WaitOptions(true, "Wait until the instance is Ready (or, with C(state=absent), gone).")...),
			kube.ReconcileOption("the FluxInstance (the Flux Operator honours the annotation)"),
			ansible.Option{Name: "src", Type: ansible.TypePath, Format: ansible.FormatFile,
				Description: []string{"A YAML file holding the FluxInstance, such as C(flux/cluster.yaml), read on the controller."}},
			ansible.Option{Name: "definition", Type: ansible.TypeDict,
				Description: []string{"The FluxInstance as a dict."}},
			ansible.Option{Name: "state", Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"Whether the FluxInstance should exist."}},
			ansible.Option{Name: "require_secrets", NotSecret: true, Type: ansible.TypeList, Elements: ansible.TypeStr, Format: ansible.FormatNamespacedName, Default: []any{},
				Description: []string{"Secrets, as C(namespace/name), that must exist before the instance is applied (for example C(flux-system/git-deploy-key), C(flux-system/sops-age)); the task fails naming every missing one, before applying."}},
			ansible.Option{Name: "operator_namespace", Default: "flux-system", Format: ansible.FormatNamespace,
				Description: []string{"Namespace of the Flux Operator Deployment."}},
			ansible.Option{Name: "operator_deployment", Default: "flux-operator", Format: ansible.FormatObjectName,
				Description: []string{"Name of the Flux Operator Deployment (the Helm release name)."}},
			ansible.Option{Name: "uninstall", Type: ansible.TypeBool, Default: true,
				Description: []string{"With C(state=absent): let the operator uninstall Flux (true), or keep Flux running (false)."}},
			ansible.Option{Name: "host_network", Type: ansible.TypeBool, Default: false,
				Description: []string{
					"Run every Flux controller on the host network, tolerating C(node.kubernetes.io/not-ready): for a cluster whose CNI Flux installs (k3s with C(flannel-backend: none)), whose nodes are NotReady, without a Pod network, until then.",
					"Adds one JSON patch per controller to C(spec.kustomize.patches), after the instance's own: C(hostNetwork), the toleration, and ports of its own (9790-9806; notification-controller's webhook receiver keeps 9292), since on the host network every container port is a node port and all controllers ask 8080 and 9440, as the operator does; source-controller advertises its artifacts at its Pod's address (the node's), which needs neither cluster DNS nor a Service.",
				}},
			ansible.Option{Name: "force", Type: ansible.TypeBool, Default: false,
				Description: []string{"Apply (or, with C(state=absent), delete) even when Flux has adopted the instance."}},
		),
		RequiredIf:        []ansible.RequiredIf{{Key: "state", Value: "present", Requirements: []string{"src", "definition"}, AnyOf: true}},
		MutuallyExclusive: [][]string{{"src", "definition"}},
	},
	Examples: `
- name: Hand off to Flux
  gitops.k3s_flux.flux_instance:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    src: "{{ playbook_dir }}/../flux/cluster.yaml"
    require_secrets:
      - flux-system/git-deploy-key
      - flux-system/sops-age
    wait_timeout: 600
  register: flux

- name: Show what Flux runs
  ansible.builtin.debug:
    msg: "Flux {{ flux.last_applied_revision }}: {{ flux.components | map(attribute='name') | join(', ') }}"
`,
	Returns: []ansible.Return{
		{Name: "ready", Description: []string{"Whether the instance is Ready."}, Returned: "state is present", Type: "bool", Sample: true},
		{Name: "reason", Description: []string{"The Ready condition's reason."}, Returned: "state is present", Type: "str", Sample: "ReconciliationSucceeded"},
		{Name: "message", Description: []string{"The Ready condition's message."}, Returned: "state is present", Type: "str", Sample: "Reconciliation finished in 3s"},
		{Name: "last_applied_revision", Description: []string{"The Flux distribution revision the operator applied."}, Returned: "state is present", Type: "str", Sample: "v2.9.5@sha256:4cc5..."},
		{Name: "components", Description: []string{"The installed controllers: name, repository, tag."}, Returned: "state is present", Type: "list", Sample: []any{map[string]any{"name": "source-controller", "repository": "ghcr.io/fluxcd/source-controller", "tag": "v1.9.5"}}},
		{Name: "adopted", Description: []string{"Whether Flux has adopted the instance, so it was left alone."}, Returned: "always", Type: "bool", Sample: false},
		{Name: "reconciles_requested", Description: []string{"Each reconcile the wait for Ready requested of the operator (see C(reconcile_stalled_after)), as C(FluxInstance/namespace/flux)."}, Returned: "always", Type: "list", Sample: []any{}},
		{Name: "conditions", Description: []string{"The instance's conditions, when a wait failed."}, Returned: "failure", Type: "list", Sample: []any{}},
		{Name: "events", Description: []string{"Recent events of the instance (or of the operator Deployment), when a wait failed."}, Returned: "failure", Type: "list", Sample: []any{}},
	},
}
