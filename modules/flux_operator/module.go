package fluxoperator

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// defaultChartRef is where the Flux Operator's chart is published.
const defaultChartRef = "oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator"

var module = &ansible.Module{
	Name:             "flux_operator",
	ShortDescription: "Install, upgrade or remove the Flux Operator Helm chart with the Helm SDK",
	Description: []string{
		"Installs the Flux Operator chart (any chart: OCI, repository or local path) as a Helm release, by default C(flux-operator) in C(flux-system), the release Flux adopts later. No helm binary is needed.",
		"Does nothing when the deployed chart version and values already match; upgrades when either changes, with the manifest diff in diff mode. Check mode renders the chart and diffs the manifests without installing; when the C(kubeconfig) file does not exist yet (a first run), it renders the chart for the Kubernetes version of the client-go it was built with and plans a fresh install, with a warning.",
		"A release left C(pending-install), C(pending-upgrade) or C(pending-rollback) by an interrupted run is recovered (rolled back to the last deployed revision, or uninstalled when there is none) with a warning that says what was done, then upgraded only when that revision is not of the chart version and values asked for. Check mode warns that a real run will recover it and reports what the recovery (and any upgrade after it) would leave.",
		"A pending revision is taken as interrupted only once it started longer ago than C(wait_timeout) plus one minute. Until then another run may still be carrying it out, and the task fails without changing anything (in check mode too), saying that another operation is in progress and when it will be recovered.",
		"C(ca_file) works together with C(registry_username) and C(registry_password): one registry client carries both.",
		"Once a Flux HelmRelease has adopted the release (its objects carry C(helm.toolkit.fluxcd.io/name)), the module reports C(adopted) and leaves it alone, unless C(force=true).",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Spec: ansible.Spec{
		Options: append(append(kube.ConnectionOptions(), kube.WaitOptions(true, "Wait until the release's resources are ready.")...),
			ansible.Option{Name: "chart_ref", Default: defaultChartRef,
				Description: []string{"The chart: an C(oci://) reference, a local chart directory or .tgz, or a chart name in C(chart_repo_url)."}},
			ansible.Option{Name: "chart_repo_url",
				Description: []string{"A classic Helm repository URL; C(chart_ref) is then the chart's name in it."}},
			ansible.Option{Name: "chart_version",
				Description: []string{"The chart version to install, pinned (for example C(0.59.0)). Default: the newest."}},
			ansible.Option{Name: "release_name", Default: "flux-operator", Format: ansible.FormatObjectName, Aliases: []string{"name"},
				Description: []string{"The Helm release name."}},
			ansible.Option{Name: "release_namespace", Default: "flux-system", Format: ansible.FormatNamespace, Aliases: []string{"namespace"},
				Description: []string{"The namespace of the release."}},
			ansible.Option{Name: "create_namespace", Type: ansible.TypeBool, Default: true,
				Description: []string{"Create the release namespace if it does not exist."}},
			ansible.Option{Name: "values", Type: ansible.TypeDict, Default: map[string]any{},
				Description: []string{"Chart values, merged over C(values_files)."}},
			ansible.Option{Name: "values_files", Type: ansible.TypeList, Elements: ansible.TypePath, Format: ansible.FormatFile, Default: []any{},
				Description: []string{"Values files on the controller, merged in order."}},
			ansible.Option{Name: "atomic", Type: ansible.TypeBool, Default: true,
				Description: []string{"Roll a failed upgrade back (and remove a failed install), so that nothing half-installed is left."}},
			ansible.Option{Name: "state", Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"Whether the release should be installed."}},
			ansible.Option{Name: "registry_username", Description: []string{"Username for the OCI registry or chart repository."}},
			ansible.Option{Name: "registry_password", NoLog: true, Description: []string{"Password or token for the OCI registry or chart repository."}},
			ansible.Option{Name: "ca_file", Type: ansible.TypePath, Format: ansible.FormatFile, Description: []string{"CA bundle to verify the registry or repository with."}},
			ansible.Option{Name: "plain_http", Type: ansible.TypeBool, Default: false,
				Description: []string{"Use plain HTTP for the OCI registry (a local registry)."}},
			ansible.Option{Name: "force", Type: ansible.TypeBool, Default: false,
				Description: []string{"Change the release even when Flux has adopted it."}},
		),
		RequiredTogether: [][]string{{"registry_username", "registry_password"}},
	},
	Examples: `
- name: Install the Flux Operator
  gitops.k3s_flux.flux_operator:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    chart_version: 0.59.0
    values:
      web:
        enabled: false
  register: operator
`,
	Returns: []ansible.Return{
		{Name: "release", Description: []string{"The release: name, namespace, revision, chart, app_version, status."}, Returned: "state is present", Type: "dict",
			Sample: map[string]any{"name": "flux-operator", "namespace": "flux-system", "revision": 1, "chart": "flux-operator-0.59.0", "app_version": "v0.59.0", "status": "deployed"}},
		{Name: "adopted", Description: []string{"Whether a Flux HelmRelease has adopted the release, so it was left alone."}, Returned: "always", Type: "bool", Sample: false},
		{Name: "recovered", Description: []string{"What was done to a release found pending, if anything."}, Returned: "when a pending release was recovered", Type: "str", Sample: "rolled back from pending-upgrade to revision 2"},
	},
}
