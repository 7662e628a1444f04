#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.flux_status_info is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: flux_status_info
short_description: 'Report what Flux reconciles: sources, Kustomizations, HelmReleases
  and what is failing'
version_added: 0.1.0
description:
- 'An info module: read-only, the same in check mode, except that a wait may ask Flux
  to reconcile what shows no progress (C(reconcile_stalled_after)), as C(flux reconcile)
  does. (Named C(flux_status) before 0.1.0; that name redirects here.) Lists every
  Flux source (GitRepository, OCIRepository, HelmRepository, Bucket) with its Ready
  state and revision, every Kustomization and HelmRelease with its Ready state, reason
  and C(dependsOn), and the list of what is not Ready.'
- With C(wait), waits until nothing is failing (and, with C(wait_for_revision), until
  the source serves that revision), and on timeout fails with the last conditions
  and recent events of what is still failing.
- This is what C(just fx sources) and C(just fx failing) show, as results a play checks
  with C(ansible.builtin.assert).
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
  host:
    description:
    - The API server's URL, instead of the kubeconfig's (as role k8s_cluster reaches
      another server while the endpoint's is down).
    type: str
  kubeconfig:
    description:
    - Path to the kubeconfig. Defaults to C($KUBECONFIG), then C(~/.kube/config).
    type: path
  namespace:
    description:
    - 'Only report objects in this namespace. Default: all namespaces.'
    - Must be a Kubernetes namespace name (at most 63 lowercase letters, digits or
      '-', starting and ending with a letter or digit); checked before anything is
      done.
    type: str
  reconcile_stalled_after:
    description:
    - While waiting, request a reconcile of each object that is not Ready (and the
      source, while it does not serve C(wait_for_revision)) when its status has not
      changed for this many seconds, as C(flux reconcile) does (the C(reconcile.fluxcd.io/requestedAt)
      annotation), at most 3 times each, this many seconds apart. After an API server
      outage a Flux controller can leave an object "Reconciliation in progress" until
      its next interval; a request moves it on.
    - C(0) never requests. Check mode never requests. The requests made are in C(reconciles_requested).
    type: int
    default: 60
  source:
    description:
    - The source C(wait_for_revision) applies to, as C(namespace/name) (any source
      kind).
    - Must be namespace/name, each a Kubernetes name; checked before anything is done.
    type: str
    default: flux-system/flux-system
  validate_certs:
    description:
    - Whether to verify the API server's certificate. Defaults to what the kubeconfig
      says.
    type: bool
    aliases:
    - verify_ssl
  wait:
    description:
    - Wait until nothing is failing (and the revision is served).
    type: bool
    default: false
  wait_for_revision:
    description:
    - 'A revision the source must serve: a commit SHA (full or at least 7 characters),
      or a full Flux revision such as C(main@sha1:<sha>).'
    type: str
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
    support: none
    description: Will return details on what has changed (or possibly needs changing
      in check_mode), when in diff mode.
  platform:
    support: full
    description: 'A Go binary module: the target needs no Python.'
    platforms: posix
notes:
- An object counts as Ready when its Ready condition is True for its current generation
  (as kstatus reads it). Suspended objects are reported but do not count as failing.
- When Flux's CRDs are not installed, the lists are empty and C(flux_installed) is
  false.
- 'Nothing to check is not success: when C(source) does not exist, C(ready) is false.
  With C(wait), a FluxInstance in the source''s namespace that has no C(spec.sync),
  or syncs under another name, fails the task at once naming the source to use; so
  does an object that Flux reports Stalled for its current generation (Flux will not
  retry it until its spec changes).'
- A blip of the API server (unreachable, 429, 5xx, an etcd leader change) during a
  wait is retried until C(wait_timeout).
- With a kubeconfig that may read but not patch, a wait that would ask Flux to reconcile
  (C(reconcile_stalled_after)) warns once and goes on waiting without asking.
"""

EXAMPLES = r"""
- name: Verify the hand-off
  gitops.k3s_flux.flux_status_info:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    wait: true
    wait_for_revision: "{{ pushed_commit }}"
  register: flux

- name: Nothing is failing
  ansible.builtin.assert:
    that: flux.failing | length == 0
"""

RETURN = r"""
events:
  description:
  - Recent events of each failing object, when a wait timed out.
  returned: failure after a wait
  type: dict
  sample: {}
failing:
  description:
  - 'What is not Ready, one line each: C(Kind/namespace/name: reason: message).'
  returned: always
  type: list
  sample:
  - 'Kustomization/flux-system/apps: DependencyNotReady: dependency ''flux-system/infra-configs''
    is not ready'
flux_installed:
  description:
  - Whether Flux's CRDs exist.
  returned: always
  type: bool
  sample: true
helmreleases:
  description:
  - Each HelmRelease, as for Kustomizations.
  returned: always
  type: list
  sample: []
kustomizations:
  description:
  - 'Each Kustomization: namespace, name, ready, reason, message, revision (last applied),
    depends_on, suspended.'
  returned: always
  type: list
  sample:
  - depends_on:
    - flux-system/infra-configs
    name: apps
    namespace: flux-system
    ready: false
    reason: DependencyNotReady
ready:
  description:
  - The source exists, nothing is failing and, with C(wait_for_revision), the source
    serves that revision.
  returned: always
  type: bool
  sample: true
reconciles_requested:
  description:
  - Each reconcile the wait requested (see C(reconcile_stalled_after)), as C(Kind/namespace/name),
    in order.
  returned: always
  type: list
  sample:
  - Kustomization/flux-system/apps
sources:
  description:
  - 'Each source: kind, namespace, name, ready, reason, message, revision, suspended.'
  returned: always
  type: list
  sample:
  - kind: GitRepository
    name: flux-system
    namespace: flux-system
    ready: true
    reason: Succeeded
    revision: main@sha1:4f1c9a...
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
                "default": False,
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
            "namespace": {
                "type": "str",
            },
            "source": {
                "type": "str",
                "default": "flux-system/flux-system",
            },
            "wait_for_revision": {
                "type": "str",
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.flux_status_info runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
