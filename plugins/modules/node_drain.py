#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.node_drain is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: node_drain
short_description: Cordon, drain, uncordon or remove a Node, respecting PodDisruptionBudgets
version_added: 0.1.0
description:
- 'V(cordon) marks the Node unschedulable. V(drain) cordons it and then evicts its
  Pods as C(kubectl drain) does: through the Eviction API, so a PodDisruptionBudget
  that allows no disruption now holds the eviction back, retried until O(delete_options.wait_timeout);
  then it waits until the evicted Pods are gone. V(uncordon) makes it schedulable
  again.'
- Mirror (static) Pods are left alone; DaemonSet Pods are left when O(delete_options.ignore_daemonsets)
  is true and refused otherwise; a Pod no controller owns is refused unless O(delete_options.force);
  a Pod with an emptyDir volume is refused unless O(delete_options.delete_emptydir_data).
  A refusal names every such Pod and changes nothing (the Node is not cordoned either).
- 'Idempotent: a cordoned Node with nothing left to evict is unchanged. In check mode
  nothing is written; the result lists the Pods a real run would evict, and the diff
  shows the Node before and after.'
- Role k8s_cluster drains each node this way before its rolling upgrade and uncordons
  it once it is Ready on the new version; playbook remove_node drains and deletes
  a node with V(absent). Named and shaped after kubernetes.core.k8s_drain.
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
  delete_options:
    description:
    - How V(drain) treats the Node's Pods.
    type: dict
    default: {}
    suboptions:
      delete_emptydir_data:
        description:
        - Evict Pods with emptyDir volumes, whose data is lost. When false, such a
          Pod is refused.
        type: bool
        default: false
      disable_eviction:
        description:
        - 'Delete the Pods instead of evicting them: PodDisruptionBudgets are bypassed.'
        type: bool
        default: false
      force:
        description:
        - Evict Pods that no controller owns (nothing recreates them). When false,
          such a Pod is refused.
        type: bool
        default: false
      ignore_daemonsets:
        description:
        - Leave DaemonSet Pods (their controller would put them back at once). When
          false, a Node running one is refused.
        type: bool
        default: false
      terminate_grace_period:
        description:
        - Grace period in seconds given to each Pod; the Pod's own when unset.
        type: int
      wait_sleep:
        description:
        - Seconds between retries of a held-back eviction.
        type: int
        default: 5
      wait_timeout:
        description:
        - Seconds to keep retrying evictions a PodDisruptionBudget holds back and
          to wait until the Pods are gone.
        type: int
        default: 300
  host:
    description:
    - The API server's URL, instead of the kubeconfig's (as role k8s_cluster reaches
      another server while the endpoint's is down).
    type: str
  kubeconfig:
    description:
    - Path to the kubeconfig. Defaults to C($KUBECONFIG), then C(~/.kube/config).
    type: path
  name:
    description:
    - The Node.
    - Must be a Kubernetes object name (at most 253 lowercase letters, digits, '-'
      or '.', starting and ending with a letter or digit); checked before anything
      is done.
    type: str
    required: true
  state:
    description:
    - What to do with the Node. V(absent) drains it as V(drain) does, then deletes
      the Node object and waits until it is gone (k3s holds a server's Node until
      it removed its etcd member); a missing Node is already absent.
    type: str
    default: drain
    choices:
    - drain
    - cordon
    - uncordon
    - absent
  validate_certs:
    description:
    - Whether to verify the API server's certificate. Defaults to what the kubeconfig
      says.
    type: bool
    aliases:
    - verify_ssl
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
- name: Drain node2 before its upgrade
  gitops.k3s_flux.node_drain:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    name: node2
    delete_options:
      ignore_daemonsets: true
      delete_emptydir_data: true
      wait_timeout: 600

- name: Put it back in service
  gitops.k3s_flux.node_drain:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    name: node2
    state: uncordon
"""

RETURN = r"""
evicted:
  description:
  - 'The Pods evicted (in check mode: that would be), as namespace/name.'
  returned: always
  type: list
  sample:
  - default/web-7d9c-abcde
left:
  description:
  - The Pods left on the Node and why, as C(namespace/name (DaemonSet)) or C(namespace/name
    (mirror Pod)).
  returned: always
  type: list
  sample:
  - kube-system/svclb-traefik-x2x9k (DaemonSet)
unschedulable:
  description:
  - 'Whether the Node is cordoned after the task (in check mode: would be); with V(absent),
    until it was deleted.'
  returned: always
  type: bool
  sample: true
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
            "name": {
                "type": "str",
                "required": True,
            },
            "state": {
                "type": "str",
                "default": "drain",
                "choices": ["drain", "cordon", "uncordon", "absent"],
            },
            "delete_options": {
                "type": "dict",
                "default": {},
                "options": {
                    "ignore_daemonsets": {
                        "type": "bool",
                        "default": False,
                    },
                    "delete_emptydir_data": {
                        "type": "bool",
                        "default": False,
                    },
                    "force": {
                        "type": "bool",
                        "default": False,
                    },
                    "disable_eviction": {
                        "type": "bool",
                        "default": False,
                    },
                    "terminate_grace_period": {
                        "type": "int",
                    },
                    "wait_timeout": {
                        "type": "int",
                        "default": 300,
                    },
                    "wait_sleep": {
                        "type": "int",
                        "default": 5,
                    },
                },
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.node_drain runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
