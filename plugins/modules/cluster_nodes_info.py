#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.cluster_nodes_info is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_nodes_info
short_description: Wait until the cluster's Nodes are Ready, and report them
version_added: 0.1.0
description:
- 'An info module: read-only, the same in check mode. (Named C(cluster_nodes) before
  0.1.0; that name redirects here.) Lists every Node with its Ready state, roles,
  kubelet version and internal address.'
- With C(names), waits until each named Node exists and is Ready, and on timeout fails
  naming the Nodes that are missing or not Ready, with their Ready condition.
- 'With O(wait_for=registered), waits only until each named Node exists: for a cluster
  whose CNI Flux installs later (k3s with C(flannel-backend: none)), whose Nodes stay
  NotReady until then; C(not_ready) still lists them.'
- Role k8s_cluster runs it last, with the node names k3s_config returned, so a play
  ends only when every inventory host has joined.
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
  names:
    description:
    - Nodes that must exist and be Ready.
    - Must be a Kubernetes object name (at most 253 lowercase letters, digits, '-'
      or '.', starting and ending with a letter or digit); checked before anything
      is done.
    type: list
    elements: str
    default: []
  validate_certs:
    description:
    - Whether to verify the API server's certificate. Defaults to what the kubeconfig
      says.
    type: bool
    aliases:
    - verify_ssl
  version:
    description:
    - 'The kubelet version the O(names) must also report, such as C(v1.36.2+k3s1):
      after an upgrade, a Node counts only once it runs the new version (role k8s_cluster''s
      rolling upgrade waits this way). Empty: any version.'
    type: str
  wait:
    description:
    - Wait for the C(names) to be Ready. When false, report once and fail at once
      if one is not.
    type: bool
    default: true
  wait_for:
    description:
    - 'V(ready): the O(names) must be Ready. V(registered): they must exist, Ready
      or not.'
    type: str
    default: ready
    choices:
    - ready
    - registered
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
"""

EXAMPLES = r"""
- name: Wait until every node has joined
  gitops.k3s_flux.cluster_nodes_info:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    names: [node1, node2, node3]
  register: cluster

- name: Show them
  ansible.builtin.debug:
    msg: "{{ cluster.nodes | map(attribute='name') }}"
"""

RETURN = r"""
missing:
  description:
  - Names asked for that have no Node.
  returned: always
  type: list
  sample: []
nodes:
  description:
  - 'Each Node: name, ready, roles, version (kubelet), internal_ip, reason and message
    of its Ready condition.'
  returned: always
  type: list
  sample:
  - internal_ip: 10.0.0.11
    message: kubelet is posting ready status
    name: node1
    ready: true
    reason: KubeletReady
    roles:
    - control-plane
    - etcd
    - master
    version: v1.36.2+k3s1
not_ready:
  description:
  - Names asked for whose Node is not Ready.
  returned: always
  type: list
  sample: []
outdated:
  description:
  - Names asked for whose Node runs another kubelet version than O(version).
  returned: always
  type: list
  sample: []
summary:
  description:
  - 'One line per Node: name, Ready or NotReady, roles, version, internal address.'
  returned: always
  type: list
  sample:
  - node1 Ready control-plane,etcd,master v1.36.2+k3s1 10.0.0.11
  - node2 Ready <none> v1.36.2+k3s1 10.0.0.12
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
            "names": {
                "type": "list",
                "elements": "str",
                "default": [],
            },
            "wait_for": {
                "type": "str",
                "default": "ready",
                "choices": ["ready", "registered"],
            },
            "version": {
                "type": "str",
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.cluster_nodes_info runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
