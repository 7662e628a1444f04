#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.flux_instance is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: flux_instance
short_description: Apply the FluxInstance (the hand-off to Flux) and wait until Flux
  is Ready
version_added: 0.1.0
description:
- Waits for the Flux Operator (its Deployment available, the FluxInstance CRD established),
  checks that the Secrets the instance needs exist, then server-side applies the FluxInstance
  from C(src) (for example C(flux/cluster.yaml)) or C(definition), and waits until
  it is Ready for its generation with the applied revision in its status.
- 'Reports the hand-off: the instance''s Ready state and reason, the applied Flux
  revision and the installed components. On timeout it fails with the instance''s
  conditions and recent events, not just "timed out".'
- The FluxInstance is handled as an unstructured C(fluxcd.controlplane.io/v1) object.
- 'Applying is idempotent: a second run with the same definition sends no write to
  the API server (it compares with a server-side dry run).'
- 'Check mode waits for nothing: it plans with a server-side dry run; before the FluxInstance
  CRD exists (the operator is not installed yet), or when the C(kubeconfig) file does
  not exist yet (a first run), it plans the instance from its definition with a warning.
  A missing required Secret is a warning in check mode and an error in a real run.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  ca_cert:
    description:
    - A CA bundle to verify the API server with, instead of the kubeconfig's.
    - Must be an existing file; checked before anything is done.
    type: path
    aliases:
    - ssl_ca_cert
  context:
    description:
    - The kubeconfig context to use. Defaults to the current context.
    type: str
  definition:
    description:
    - The FluxInstance as a dict.
    type: dict
  force:
    description:
    - Apply (or, with C(state=absent), delete) even when Flux has adopted the instance.
    type: bool
    default: false
  host:
    description:
    - The API server's URL, instead of the kubeconfig's (as role k8s_cluster reaches
      another server while the endpoint's is down).
    type: str
  host_network:
    description:
    - 'Run every Flux controller on the host network, tolerating C(node.kubernetes.io/not-ready):
      for a cluster whose CNI Flux installs (k3s with C(flannel-backend: none)), whose
      nodes are NotReady, without a Pod network, until then.'
    - 'Adds one JSON patch per controller to C(spec.kustomize.patches), after the
      instance''s own: C(hostNetwork), the toleration, and ports of its own (9790-9806;
      notification-controller''s webhook receiver keeps 9292), since on the host network
      every container port is a node port and all controllers ask 8080 and 9440, as
      the operator does; source-controller advertises its artifacts at its Pod''s
      address (the node''s), which needs neither cluster DNS nor a Service.'
    type: bool
    default: false
  kubeconfig:
    description:
    - Path to the kubeconfig. Defaults to C($KUBECONFIG), then C(~/.kube/config).
    type: path
  operator_deployment:
    description:
    - Name of the Flux Operator Deployment (the Helm release name).
    - Must be a Kubernetes object name (at most 253 lowercase letters, digits, '-'
      or '.', starting and ending with a letter or digit); checked before anything
      is done.
    type: str
    default: flux-operator
  operator_namespace:
    description:
    - Namespace of the Flux Operator Deployment.
    - Must be a Kubernetes namespace name (at most 63 lowercase letters, digits or
      '-', starting and ending with a letter or digit); checked before anything is
      done.
    type: str
    default: flux-system
  reconcile_stalled_after:
    description:
    - While waiting, request a reconcile of the FluxInstance (the Flux Operator honours
      the annotation) when its status has not changed for this many seconds, as C(flux
      reconcile) does (the C(reconcile.fluxcd.io/requestedAt) annotation), at most
      3 times each, this many seconds apart. After an API server outage a Flux controller
      can leave an object "Reconciliation in progress" until its next interval; a
      request moves it on.
    - C(0) never requests. Check mode never requests. The requests made are in C(reconciles_requested).
    type: int
    default: 60
  require_secrets:
    description:
    - Secrets, as C(namespace/name), that must exist before the instance is applied
      (for example C(flux-system/git-deploy-key), C(flux-system/sops-age)); the task
      fails naming every missing one, before applying.
    - Must be namespace/name, each a Kubernetes name; checked before anything is done.
    type: list
    elements: str
    default: []
  src:
    description:
    - A YAML file holding the FluxInstance, such as C(flux/cluster.yaml), read on
      the controller.
    - Must be an existing file; checked before anything is done.
    type: path
  state:
    description:
    - Whether the FluxInstance should exist.
    type: str
    default: present
    choices:
    - present
    - absent
  uninstall:
    description:
    - 'With C(state=absent): let the operator uninstall Flux (true), or keep Flux
      running (false).'
    type: bool
    default: true
  validate_certs:
    description:
    - Whether to verify the API server's certificate. Defaults to what the kubeconfig
      says.
    type: bool
    aliases:
    - verify_ssl
  wait:
    description:
    - Wait until the instance is Ready (or, with C(state=absent), gone).
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
notes:
- The operator accepts only the name C(flux); the namespace defaults to C(flux-system).
- Ansible applies the FluxInstance; Flux reconciles it too only when its file is inside
  its own sync path (M(gitops.k3s_flux.flux_repo_check) warns of that, and fails when
  the two differ). Once the instance carries a C(kustomize.toolkit.fluxcd.io/name)
  or C(helm.toolkit.fluxcd.io/name) label, it is left alone (C(adopted), with a warning),
  by C(state=absent) too, unless C(force=true).
- 'C(state=absent) deletes the instance: with C(uninstall=true) the operator uninstalls
  Flux (its finalizer deletes what it installed); with C(uninstall=false) reconciliation
  is disabled first, so Flux keeps running and only the instance goes.'
"""

EXAMPLES = r"""
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
"""

RETURN = r"""
adopted:
  description:
  - Whether Flux has adopted the instance, so it was left alone.
  returned: always
  type: bool
  sample: false
components:
  description:
  - 'The installed controllers: name, repository, tag.'
  returned: state is present
  type: list
  sample:
  - name: source-controller
    repository: ghcr.io/fluxcd/source-controller
    tag: v1.9.5
conditions:
  description:
  - The instance's conditions, when a wait failed.
  returned: failure
  type: list
  sample: []
events:
  description:
  - Recent events of the instance (or of the operator Deployment), when a wait failed.
  returned: failure
  type: list
  sample: []
last_applied_revision:
  description:
  - The Flux distribution revision the operator applied.
  returned: state is present
  type: str
  sample: v2.9.5@sha256:4cc5...
message:
  description:
  - The Ready condition's message.
  returned: state is present
  type: str
  sample: Reconciliation finished in 3s
ready:
  description:
  - Whether the instance is Ready.
  returned: state is present
  type: bool
  sample: true
reason:
  description:
  - The Ready condition's reason.
  returned: state is present
  type: str
  sample: ReconciliationSucceeded
reconciles_requested:
  description:
  - Each reconcile the wait for Ready requested of the operator (see C(reconcile_stalled_after)),
    as C(FluxInstance/namespace/flux).
  returned: always
  type: list
  sample: []
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
            "reconcile_stalled_after": {
                "type": "int",
                "default": 60,
            },
            "src": {
                "type": "path",
            },
            "definition": {
                "type": "dict",
            },
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "require_secrets": {
                "type": "list",
                "elements": "str",
                "default": [],
                "no_log": False,
            },
            "operator_namespace": {
                "type": "str",
                "default": "flux-system",
            },
            "operator_deployment": {
                "type": "str",
                "default": "flux-operator",
            },
            "uninstall": {
                "type": "bool",
                "default": True,
            },
            "host_network": {
                "type": "bool",
                "default": False,
            },
            "force": {
                "type": "bool",
                "default": False,
            },
        },
        mutually_exclusive=[
            ["src", "definition"],
        ],
        required_if=[
            ("state", "present", ["src", "definition"], True),
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.flux_instance runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
