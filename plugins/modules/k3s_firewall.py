#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_firewall is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_firewall
short_description: Open the ports k3s needs in a node's ufw or firewalld, when one
  is active
version_added: 0.1.0
description:
- 'Reads which host firewall is active: ufw when installed and enabled (C(ENABLED=yes)
  in C(/etc/ufw/ufw.conf)), its rules read from its own files (C(/etc/ufw/user.rules),
  C(user6.rules)) without running it; firewalld when C(firewall-cmd --state) says
  C(running). With neither, changes nothing.'
- 'Allows in what k3s documents for the node''s role (its Requirements, Inbound Rules
  for K3s Nodes): on a server the API port (C(api_port), TCP) and, with embedded etcd,
  2379-2380/TCP; on every node the kubelet''s 10250/TCP, flannel''s backend (vxlan
  8472/UDP; wireguard-native 51820-51821/UDP) and, with the embedded registry, its
  peers'' 5001/TCP and its API on the supervisor port (C(api_port), on agents too);
  and everything from the pod and service networks, whose traffic ufw and firewalld
  would otherwise filter before kube-proxy''s rules see it.'
- 'Takes only a cluster''s networks in C(cluster_cidr) and C(service_cidr): a network
  with host bits set (C(10.42.0.1/16)) is refused naming the network it is in (C(10.42.0.0/16)),
  as Python''s C(ipaddress) does in strict mode; C(0.0.0.0/0), C(::/0) and any network
  wider than IPv4 C(/8) or IPv6 C(/48) are refused too. No cluster needs more: kube-controller-manager
  refuses an IPv6 cluster-cidr wider than C(/48) (its node blocks are C(/64) and at
  most 16 bits narrower), an IPv4 C(/8) holds 65,536 nodes'' C(/24) blocks, and the
  service-cidr is narrower still; a wider network only opens the host (C(0.0.0.0/0)
  lets in anyone).'
- 'With C(state=present), only what is missing is added, and nothing is removed: ufw''s
  rules are added with C(ufw allow ... comment ''gitops.k3s_flux: <why>''); firewalld''s
  ports go to the default zone and the networks to the C(trusted) zone, both C(--permanent),
  then C(firewall-cmd --reload).'
- With C(state=absent) (as playbook reset uses it), the ufw rules this module added,
  recognised by that comment, are taken out (C(ufw delete ...)), and no other; firewalld
  keeps no mark of who added a port, so nothing is taken out of it (a warning says
  so).
- 'Idempotent; C(--check --diff) shows the rules it would add or take out. A Go binary:
  the node needs no Python (ufw and firewalld are themselves Python programs, run
  as the host has them).'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  api_port:
    description:
    - k3s's C(https-listen-port) (the supervisor port), opened on a server, and on
      every node with C(embedded_registry) (the registry's API listens there).
    type: int
    default: 6443
  cluster_cidr:
    description:
    - The pod networks (k3s's C(cluster-cidr), one entry per address family), allowed
      in from. Each a network (no host bits set), no wider than IPv4 C(/8) or IPv6
      C(/48).
    type: list
    elements: str
    default:
    - 10.42.0.0/16
  embedded_registry:
    description:
    - 'k3s''s C(embedded-registry) is on: 5001/TCP too, and C(api_port) on an agent.'
    type: bool
    default: false
  etcd:
    description:
    - 'A server with embedded etcd: 2379-2380/TCP too.'
    type: bool
    default: false
  flannel_backend:
    description:
    - 'k3s''s C(flannel-backend): C(vxlan) needs 8472/UDP, C(wireguard-native) 51820
      and 51821/UDP; C(host-gw) and C(none) no port.'
    type: str
    default: vxlan
    choices:
    - vxlan
    - wireguard-native
    - host-gw
    - none
  role:
    description:
    - What k3s runs as on the node. Required with C(state=present).
    type: str
    choices:
    - server
    - agent
  service_cidr:
    description:
    - The service networks (k3s's C(service-cidr)), allowed in from; the same rules
      as C(cluster_cidr).
    type: list
    elements: str
    default:
    - 10.43.0.0/16
  state:
    description:
    - C(present) lets in what k3s needs; C(absent) takes out the ufw rules this module
      added.
    type: str
    default: present
    choices:
    - present
    - absent
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
    platforms: linux
"""

EXAMPLES = r"""
- name: Open what a server with embedded etcd needs
  gitops.k3s_flux.k3s_firewall:
    role: server
    etcd: true
  become: true

- name: Take out the ufw rules it added, when k3s is gone
  gitops.k3s_flux.k3s_firewall:
    state: absent
  become: true

- name: Open what an agent needs with flannel's wireguard backend and other networks
  gitops.k3s_flux.k3s_firewall:
    role: agent
    flannel_backend: wireguard-native
    cluster_cidr: [10.52.0.0/16]
    service_cidr: [10.53.0.0/16]
  become: true
"""

RETURN = r"""
added:
  description:
  - 'What was (in check mode: would be) added; empty when the firewall allowed it
    all or none is active.'
  returned: always
  type: list
  sample:
  - 6443/tcp
firewall:
  description:
  - 'The active firewall: C(ufw), C(firewalld) or C(none).'
  returned: always
  type: str
  sample: ufw
needed:
  description:
  - What k3s needs allowed in on this node, as ufw writes it.
  returned: always
  type: list
  sample:
  - 6443/tcp
  - 10250/tcp
  - 8472/udp
  - from 10.42.0.0/16
  - from 10.43.0.0/16
removed:
  description:
  - 'The ufw rules taken out (in check mode: that would be), with C(state=absent).'
  returned: always
  type: list
  sample:
  - allow 6443/tcp
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "role": {
                "type": "str",
                "choices": ["server", "agent"],
            },
            "etcd": {
                "type": "bool",
                "default": False,
            },
            "flannel_backend": {
                "type": "str",
                "default": "vxlan",
                "choices": ["vxlan", "wireguard-native", "host-gw", "none"],
            },
            "api_port": {
                "type": "int",
                "default": 6443,
            },
            "embedded_registry": {
                "type": "bool",
                "default": False,
            },
            "cluster_cidr": {
                "type": "list",
                "elements": "str",
                "default": ["10.42.0.0/16"],
            },
            "service_cidr": {
                "type": "list",
                "elements": "str",
                "default": ["10.43.0.0/16"],
            },
        },
        required_if=[
            ("state", "present", ["role"]),
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_firewall runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
