#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_node_info is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_node_info
short_description: 'Read k3s on a node: its version, its units, and on a server the
  node token and admin kubeconfig'
version_added: 0.1.0
description:
- Reads the installed k3s version and the state of the C(k3s) and C(k3s-agent) units.
  Changes nothing.
- On a server, returns the node token the other nodes join with, and the admin kubeconfig
  k3s wrote, when asked for; failing to read either fails the task, naming the file.
- 'A Go binary: the node needs no Python.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  certificate_warning_days:
    description:
    - 'Read k3s''s certificates on the node (every C(*.crt) under C(<data_dir>/server/tls)
      and C(<data_dir>/agent), each certificate of a chain, and the client certificate
      of C(kubeconfig_path)) and warn when the earliest expires within this many days,
      or has expired, saying when and how to renew it: k3s renews a server''s certificates
      when it starts within 120 days of their expiry, an agent''s at every start.
      Returned as C(certificates). 0: not read.'
    - A file there that holds no certificate fails the task, naming it.
    type: int
    default: 0
  data_dir:
    description:
    - k3s's data directory (k3s C(data-dir)).
    type: path
    default: /var/lib/rancher/k3s
  kubeconfig_path:
    description:
    - The admin kubeconfig a server writes (k3s C(write-kubeconfig)).
    type: path
    default: /etc/rancher/k3s/k3s.yaml
  node_name:
    description:
    - 'The C(node-name) the node''s k3s config will set; empty: none. Only read to
      compute the returned C(node_name).'
    type: str
    default: ""
  preflight:
    description:
    - 'Check, changing nothing, that the host is ready for k3s as this role: the memory
      cgroup controller (cgroup v2 or v1); the kernel modules C(overlay), C(br_netfilter)
      and, for flannel''s vxlan backend, C(vxlan), each loaded, built in or loadable;
      a sysctl file that turns IPv4 forwarding off (a warning: k3s turns it on when
      it starts, a later C(sysctl --system) off again); swap (a warning); the tools
      k3s''s install script needs (systemd or OpenRC, curl or wget unless airgap,
      sha256sum); free space under C(data_dir) (an error under 1 GiB, a warning under
      4 GiB); the ports k3s listens on (the API port and 10250, and 2379-2380 with
      embedded etcd) not taken by another process; with ufw or firewalld active, what
      k3s needs from the other nodes and from the pod and service networks let in
      (as module k3s_firewall opens it; the fix lists the commands); the node''s clock
      within 5 seconds of the Ansible controller''s (certificates and etcd need agreeing
      clocks: the action plugin compares them, the time the module took counted in
      the node''s favour).'
    - 'Each finding names what was seen and the fix (for a Raspberry Pi, the C(cmdline.txt)
      to edit and the words to add). Returned as C(preflight). Not set: no check.'
    type: dict
    suboptions:
      api_port:
        description:
        - k3s's C(https-listen-port), checked on a server.
        type: int
        default: 6443
      cluster_cidr:
        description:
        - The pod networks (k3s's C(cluster-cidr)), which an active ufw or firewalld
          must let in.
        type: list
        elements: str
        default:
        - 10.42.0.0/16
      embedded_registry:
        description:
        - 'k3s''s C(embedded-registry) is on: an active firewall must let in 5001/TCP
          too.'
        type: bool
        default: false
      etcd:
        description:
        - 'A server with embedded etcd: its ports 2379 and 2380 are checked too.'
        type: bool
        default: false
      firewall_opened:
        description:
        - 'What an active ufw or firewalld does not let in is opened next (module
          k3s_firewall, as role k8s_cluster does unless C(k8s_cluster_firewall) is
          false): a closed port is then a warning.'
        type: bool
        default: false
      flannel_backend:
        description:
        - 'k3s''s C(flannel-backend): C(vxlan) needs the C(vxlan) module.'
        type: str
        default: vxlan
      install_source:
        description:
        - 'How k3s is installed: C(airgap) needs no download tool.'
        type: str
        default: script
        choices:
        - script
        - airgap
      mode:
        description:
        - C(strict) fails the task on any error finding, listing them all; C(warn)
          reports every finding as a warning.
        type: str
        default: strict
        choices:
        - strict
        - warn
      reboot_pending:
        description:
        - 'The host''s kernel command line was prepared for the memory cgroup (module
          k3s_prepare) and the host reboots before k3s is installed, as role k8s_cluster
          does: a missing memory cgroup is then a warning. For a C(--check) run, where
          the reboot is not made.'
        type: bool
        default: false
      role:
        description:
        - What k3s will run as on the host.
        type: str
        required: true
        choices:
        - server
        - agent
      service_cidr:
        description:
        - The service networks (k3s's C(service-cidr)), which an active ufw or firewalld
          must let in.
        type: list
        elements: str
        default:
        - 10.43.0.0/16
  return_kubeconfig:
    description:
    - Return the content of C(kubeconfig_path).
    type: bool
    default: false
  return_token:
    description:
    - Return the node token, C(<data_dir>/server/node-token).
    type: bool
    default: false
  with_node_id:
    description:
    - The node's k3s config will set C(with-node-id). Only read to compute the returned
      C(node_name).
    type: bool
    default: false
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
    platforms: linux
notes:
- 'C(token) and C(kubeconfig) are secrets: the action plugin prints a result that
  holds either censored, as C(no_log: true) would, while the registered variable keeps
  both. A failed read returns neither, so its message is shown. Both files are readable
  by root only: use C(become).'
"""

EXAMPLES = r"""
- name: Read the first server's token and kubeconfig
  gitops.k3s_flux.k3s_node_info:
    return_token: true
    return_kubeconfig: true
  become: true
  register: k3s_first
"""

RETURN = r"""
certificates:
  description:
  - 'k3s''s certificates on the node: C(count), how many were read, and C(earliest),
    the one that expires first: its C(path), C(subject) (common name), C(not_after)
    (RFC 3339, UTC) and C(days_left) (whole days, negative once expired). Without
    k3s, C(count) 0 and no C(earliest).'
  returned: when certificate_warning_days is above 0
  type: dict
  sample:
    count: 31
    earliest:
      days_left: 364
      not_after: "2027-12-06T10:00:00Z"
      path: /var/lib/rancher/k3s/server/tls/client-admin.crt
      subject: system:admin
firewall:
  description:
  - The active host firewall, C(ufw), C(firewalld) or C(none), as module k3s_firewall
    reads it.
  returned: when preflight is set
  type: str
  sample: none
hostname:
  description:
  - 'The host name in lower case: the name k3s registers the node under when its config
    sets no C(node-name).'
  returned: always
  type: str
  sample: node1
kubeconfig:
  description:
  - The admin kubeconfig's content. A secret.
  returned: when return_kubeconfig is true
  type: str
  sample: |-
    apiVersion: v1
    clusters: ...
node_id:
  description:
  - 'The suffix k3s adds to the node name, after C(-), when its config sets C(with-node-id):
    the content of C(/etc/rancher/node/id), which k3s makes at its first start with
    that flag. Empty when there is none.'
  returned: always
  type: str
  sample: 5a1b2c3d
node_name:
  description:
  - 'The name k3s will register the node under, as module k3s_config computes it:
    C(node_name), else the host name, in lower case; with C(with_node_id), followed
    by C(-) and C(node_id). Empty when C(with_node_id) is set and k3s has not made
    that id yet (before its first start): the name is then unique but not known.'
  returned: always
  type: str
  sample: node1
node_time:
  description:
  - 'The node''s clock when the checks ran, in seconds since the epoch: the action
    plugin compares it with the controller''s (the C(clock) finding).'
  returned: when preflight is set
  type: float
  sample: 1.79642880025e+09
preflight:
  description:
  - 'What the host lacks for k3s: each finding''s C(check), C(severity) (C(error):
    k3s would not work; C(warning)), what was C(seen) and the C(fix); the C(clock)
    finding also its C(round_trip), the seconds the read took, by which the node''s
    real offset may exceed the one seen. Empty when the host is ready.'
  returned: when preflight is set
  type: list
  sample:
  - check: memory cgroup
    fix: add "cgroup_memory=1 cgroup_enable=memory" at the end of the single line
      in /boot/firmware/cmdline.txt, then reboot
    seen: 'cgroup v2 without the memory controller (/sys/fs/cgroup/cgroup.controllers:
      cpuset cpu io pids)'
    severity: error
server:
  description:
  - 'The C(server) k3s''s config (C(/etc/rancher/k3s/config.yaml) and its C(config.yaml.d)
    drop-ins) points the node at: the server it joined. Empty on a first server (C(cluster-init))
    and where k3s has no config.'
  returned: always
  type: str
  sample: https://192.168.1.11:6443
token:
  description:
  - The node token. A secret.
  returned: when return_token is true
  type: str
  sample: K10<sha256>::server:<secret>
units:
  description:
  - 'The state of each k3s unit: C(loaded), C(enabled), C(active) (k3s runs and reported
    ready; a unit still starting or waiting to be restarted is not), systemd''s C(active_state)
    and C(sub_state) (C(activating)/C(auto-restart) is a k3s that keeps exiting),
    and C(restarts) (systemd''s NRestarts).'
  returned: always
  type: dict
  sample:
    k3s:
      active: true
      active_state: active
      enabled: true
      loaded: true
      restarts: 0
      sub_state: running
    k3s-agent:
      active: false
      active_state: inactive
      enabled: false
      loaded: false
      restarts: 0
      sub_state: dead
version:
  description:
  - The installed k3s version; empty when there is none.
  returned: always
  type: str
  sample: v1.36.2+k3s1
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "return_token": {
                "type": "bool",
                "default": False,
            },
            "return_kubeconfig": {
                "type": "bool",
                "default": False,
            },
            "data_dir": {
                "type": "path",
                "default": "/var/lib/rancher/k3s",
            },
            "kubeconfig_path": {
                "type": "path",
                "default": "/etc/rancher/k3s/k3s.yaml",
            },
            "node_name": {
                "type": "str",
                "default": "",
            },
            "with_node_id": {
                "type": "bool",
                "default": False,
            },
            "certificate_warning_days": {
                "type": "int",
                "default": 0,
            },
            "preflight": {
                "type": "dict",
                "options": {
                    "mode": {
                        "type": "str",
                        "default": "strict",
                        "choices": ["strict", "warn"],
                    },
                    "role": {
                        "type": "str",
                        "required": True,
                        "choices": ["server", "agent"],
                    },
                    "etcd": {
                        "type": "bool",
                        "default": False,
                    },
                    "flannel_backend": {
                        "type": "str",
                        "default": "vxlan",
                    },
                    "install_source": {
                        "type": "str",
                        "default": "script",
                        "choices": ["script", "airgap"],
                    },
                    "api_port": {
                        "type": "int",
                        "default": 6443,
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
                    "embedded_registry": {
                        "type": "bool",
                        "default": False,
                    },
                    "firewall_opened": {
                        "type": "bool",
                        "default": False,
                    },
                    "reboot_pending": {
                        "type": "bool",
                        "default": False,
                    },
                },
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_node_info runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
