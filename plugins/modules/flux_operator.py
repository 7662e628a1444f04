#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.flux_operator is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: flux_operator
short_description: Install, upgrade or remove the Flux Operator Helm chart with the
  Helm SDK
version_added: 0.1.0
description:
- 'Installs the Flux Operator chart (any chart: OCI, repository or local path) as
  a Helm release, by default C(flux-operator) in C(flux-system), the release Flux
  adopts later. No helm binary is needed.'
- Does nothing when the deployed chart version and values already match; upgrades
  when either changes, with the manifest diff in diff mode. Check mode renders the
  chart and diffs the manifests without installing; when the C(kubeconfig) file does
  not exist yet (a first run), it renders the chart for the Kubernetes version of
  the client-go it was built with and plans a fresh install, with a warning.
- A release left C(pending-install), C(pending-upgrade) or C(pending-rollback) by
  an interrupted run is recovered (rolled back to the last deployed revision, or uninstalled
  when there is none) with a warning that says what was done, then upgraded only when
  that revision is not of the chart version and values asked for. Check mode warns
  that a real run will recover it and reports what the recovery (and any upgrade after
  it) would leave.
- A pending revision is taken as interrupted only once it started longer ago than
  C(wait_timeout) plus one minute. Until then another run may still be carrying it
  out, and the task fails without changing anything (in check mode too), saying that
  another operation is in progress and when it will be recovered.
- 'C(ca_file) works together with C(registry_username) and C(registry_password): one
  registry client carries both.'
- Once a Flux HelmRelease has adopted the release (its objects carry C(helm.toolkit.fluxcd.io/name)),
  the module reports C(adopted) and leaves it alone, unless C(force=true).
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  atomic:
    description:
    - Roll a failed upgrade back (and remove a failed install), so that nothing half-installed
      is left.
    type: bool
    default: true
  ca_cert:
    description:
    - A CA bundle to verify the API server with, instead of the kubeconfig's.
    - Must be an existing file; checked before anything is done.
    type: path
    aliases:
    - ssl_ca_cert
  ca_file:
    description:
    - CA bundle to verify the registry or repository with.
    - Must be an existing file; checked before anything is done.
    type: path
  chart_ref:
    description:
    - 'The chart: an C(oci://) reference, a local chart directory or .tgz, or a chart
      name in C(chart_repo_url).'
    type: str
    default: oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator
  chart_repo_url:
    description:
    - A classic Helm repository URL; C(chart_ref) is then the chart's name in it.
    type: str
  chart_version:
    description:
    - 'The chart version to install, pinned (for example C(0.59.0)). Default: the
      newest.'
    type: str
  context:
    description:
    - The kubeconfig context to use. Defaults to the current context.
    type: str
  create_namespace:
    description:
    - Create the release namespace if it does not exist.
    type: bool
    default: true
  force:
    description:
    - Change the release even when Flux has adopted it.
    type: bool
    default: false
  host:
    description:
    - The API server's URL, instead of the kubeconfig's (as role k8s_cluster reaches
      another server while the endpoint's is down).
    type: str
  kubeconfig:
    description:
    - Path to the kubeconfig. Defaults to C($KUBECONFIG), then C(~/.kube/config).
    type: path
  plain_http:
    description:
    - Use plain HTTP for the OCI registry (a local registry).
    type: bool
    default: false
  registry_password:
    description:
    - Password or token for the OCI registry or chart repository.
    type: str
  registry_username:
    description:
    - Username for the OCI registry or chart repository.
    type: str
  release_name:
    description:
    - The Helm release name.
    - Must be a Kubernetes object name (at most 253 lowercase letters, digits, '-'
      or '.', starting and ending with a letter or digit); checked before anything
      is done.
    type: str
    default: flux-operator
    aliases:
    - name
  release_namespace:
    description:
    - The namespace of the release.
    - Must be a Kubernetes namespace name (at most 63 lowercase letters, digits or
      '-', starting and ending with a letter or digit); checked before anything is
      done.
    type: str
    default: flux-system
    aliases:
    - namespace
  state:
    description:
    - Whether the release should be installed.
    type: str
    default: present
    choices:
    - present
    - absent
  validate_certs:
    description:
    - Whether to verify the API server's certificate. Defaults to what the kubeconfig
      says.
    type: bool
    aliases:
    - verify_ssl
  values:
    description:
    - Chart values, merged over C(values_files).
    type: dict
    default: {}
  values_files:
    description:
    - Values files on the controller, merged in order.
    - Must be an existing file; checked before anything is done.
    type: list
    elements: path
    default: []
  wait:
    description:
    - Wait until the release's resources are ready.
    type: bool
    default: true
  wait_timeout:
    description:
    - How many seconds to wait. A wait outlasts API server restarts and other transient
      errors until then.
    type: int
    default: 300
    aliases:
    - timeout
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without
      modifying target.
  diff_mode:
    support: full
    description: Will return details on what has changed (or possibly needs changing
      in check_mode), when in diff mode.
  platform:
    support: full
    description: 'A Go binary module: the target needs no Python.'
    platforms: posix
"""

EXAMPLES = r"""
- name: Install the Flux Operator
  gitops.k3s_flux.flux_operator:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    chart_version: 0.59.0
    values:
      web:
        enabled: false
  register: operator
"""

RETURN = r"""
adopted:
  description:
  - Whether a Flux HelmRelease has adopted the release, so it was left alone.
  returned: always
  type: bool
  sample: false
recovered:
  description:
  - What was done to a release found pending, if anything.
  returned: when a pending release was recovered
  type: str
  sample: rolled back from pending-upgrade to revision 2
release:
  description:
  - 'The release: name, namespace, revision, chart, app_version, status.'
  returned: state is present
  type: dict
  sample:
    app_version: v0.59.0
    chart: flux-operator-0.59.0
    name: flux-operator
    namespace: flux-system
    revision: 1
    status: deployed
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "kubeconfig": {
                "type": "path",
            },
            "context": {
                "type": "str",
            },
            "host": {
                "type": "str",
            },
            "validate_certs": {
                "type": "bool",
                "aliases": ["verify_ssl"],
            },
            "ca_cert": {
                "type": "path",
                "aliases": ["ssl_ca_cert"],
            },
            "wait": {
                "type": "bool",
                "default": True,
            },
            "wait_timeout": {
                "type": "int",
                "default": 300,
                "aliases": ["timeout"],
            },
            "chart_ref": {
                "type": "str",
                "default": "oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator",
            },
            "chart_repo_url": {
                "type": "str",
            },
            "chart_version": {
                "type": "str",
            },
            "release_name": {
                "type": "str",
                "default": "flux-operator",
                "aliases": ["name"],
            },
            "release_namespace": {
                "type": "str",
                "default": "flux-system",
                "aliases": ["namespace"],
            },
            "create_namespace": {
                "type": "bool",
                "default": True,
            },
            "values": {
                "type": "dict",
                "default": {},
            },
            "values_files": {
                "type": "list",
                "elements": "path",
                "default": [],
            },
            "atomic": {
                "type": "bool",
                "default": True,
            },
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "registry_username": {
                "type": "str",
            },
            "registry_password": {
                "type": "str",
                "no_log": True,
            },
            "ca_file": {
                "type": "path",
            },
            "plain_http": {
                "type": "bool",
                "default": False,
            },
            "force": {
                "type": "bool",
                "default": False,
            },
        },
        required_together=[
            ["registry_username", "registry_password"],
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.flux_operator runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
