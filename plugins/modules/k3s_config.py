#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_config is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_config on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_config
short_description: Render the k3s config file (config.yaml or a config.yaml.d drop-in)
  on a node
version_added: 0.1.0
description:
- Writes C(/etc/rancher/k3s/config.yaml), or a drop-in under C(config.yaml.d/), from
  a dict of k3s flags plus the keys the module owns (C(token), C(server), C(cluster_init)).
- Every key is checked against the flags of the node's C(role) (k3s server or agent),
  with a suggestion for a misspelt key; values are checked against the flag's type,
  and the YAML traps that turn C(0644) into 420 or C(no) into false are caught.
- The file is canonical (keys sorted, lists in block style), written atomically, mode
  0600 and owned by root, because it holds the cluster token.
- 'A Go binary: the node needs no Python.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  backup:
    description:
    - Keep a copy of the old file, named C(<file>.<pid>.<timestamp>~), before replacing
      or removing it.
    type: bool
    default: false
  cluster_init:
    description:
    - Start a new HA cluster with embedded etcd on this server (k3s C(cluster-init)).
      Set on the first server only.
    type: bool
  config:
    description:
    - k3s flags as keys without the leading dashes, for example C(node-label), C(tls-san),
      C(write-kubeconfig-mode).
    - A key ending in C(+) appends to a list flag (useful in drop-ins). A key whose
      value is null is left out.
    - List flags take YAML lists; for the flags k3s splits on commas (tls-san, node-ip,
      disable, ...) a comma-separated string is split the same way.
    type: dict
    default: {}
  drop_in:
    description:
    - Write the drop-in C(<path>.d/<drop_in>.yaml) instead of C(path) itself, for
      example C(50-ansible).
    - k3s reads drop-ins in lexical order after the main file, so start the name with
      two digits.
    type: str
  path:
    description:
    - The k3s config file. With C(drop_in), the drop-in goes in the C(<path>.d/) directory
      beside it.
    type: path
    default: /etc/rancher/k3s/config.yaml
  role:
    description:
    - Whether this node runs C(k3s server) or C(k3s agent); it decides which flags
      C(config) may hold.
    type: str
    required: true
    choices:
    - server
    - agent
  server:
    description:
    - URL of an existing server to join (k3s C(server)), such as C(https://10.0.0.10:6443).
      Set on agents, and on the second and later servers of an HA cluster.
    type: str
  state:
    description:
    - C(absent) removes the file (for example a drop-in no longer wanted).
    type: str
    default: present
    choices:
    - present
    - absent
  token:
    description:
    - 'The cluster token (k3s C(token)): the shared secret servers and agents join
      with. Never shown in output or diffs.'
    type: str
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
notes:
- k3s reads config.yaml first, then each C(config.yaml.d/*.yaml) drop-in in lexical
  order; a plain key in a later file replaces the earlier value and a C(key+) key
  appends to a list flag.
- A server-only key on an agent fails here, because C(k3s agent) refuses to start
  with it; an agent-only key on a server fails too, because C(k3s server) would silently
  drop it.
- 'In diffs the values of C(token) and of the secret flags (agent-token, etcd-s3-access-key,
  etcd-s3-secret-key, etcd-s3-session-token, datastore-endpoint, vpn-auth) are replaced
  by C(<redacted>), and on the new side by C(<redacted, changed>) where the value
  changed; nothing derived from a secret is ever shown. A file already on the node
  is parsed to find its secrets whatever its style (flow style, JSON, a block scalar,
  the value on the line after its key): shown as written when the line-by-line redaction
  leaves none of them in it, else rendered again from the parse with each replaced,
  and as C(<not shown: does not parse>) when it does not parse. They are masked in
  the result like a no_log option, and so is the password of a URL anywhere in the
  config or the file (C(etcd-s3-proxy)''s), in every form: as written, percent-decoded
  and percent-encoded.'
- 'k3s does not reload its config: act on C(restart_needed) by restarting the k3s
  service.'
"""

EXAMPLES = r"""
- name: Configure the first server of an HA cluster
  gitops.k3s_flux.k3s_config:
    role: server
    token: "{{ k3s_token }}"
    cluster_init: true
    config:
      write-kubeconfig-mode: "0600"
      tls-san:
        - k8s.example.internal
        - 10.0.0.10
      disable:
        - traefik
      node-label:
        - topology.kubernetes.io/zone=rack-a
  register: k3s_config
  notify: Restart k3s

- name: Join a worker
  gitops.k3s_flux.k3s_config:
    role: agent
    server: https://10.0.0.10:6443
    token: "{{ k3s_token }}"
    config:
      node-taint:
        - dedicated=storage:NoSchedule

- name: Add labels in a drop-in, keeping the main file as it is
  gitops.k3s_flux.k3s_config:
    role: agent
    drop_in: 50-labels
    config:
      node-label+:
        - disk=ssd
"""

RETURN = r"""
backup_file:
  description:
  - The copy of the old file, when C(backup) made one.
  returned: changed and backup is true
  type: str
  sample: /etc/rancher/k3s/config.yaml.4242.2026-12-02@10:00:00~
checksum:
  description:
  - sha256 of the rendered content (what the file holds after the task) with the values
    of C(token) and the secret flags left out, so that it cannot be used to test a
    guessed secret. A changed secret shows in C(changed) and C(restart_needed), not
    here.
  returned: when state is present
  type: str
  sample: 0b5d7c7b3f5a8d0e2c1f4a6b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d
node_name:
  description:
  - 'The name k3s registers this node under: C(node-name) from C(config), else the
    host name in lower case; with C(with-node-id), followed by C(-) and the id k3s
    keeps in C(/etc/rancher/node/id). Empty when C(with-node-id) is set and k3s has
    not made that id yet (before its first start).'
  returned: when state is present
  type: str
  sample: node1
path:
  description:
  - The file written or removed.
  returned: always
  type: str
  sample: /etc/rancher/k3s/config.yaml
restart_needed:
  description:
  - Whether the content k3s reads changed, so the k3s service must restart to use
    it. A mode or owner fix alone needs no restart.
  returned: always
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {
                "type": "path",
                "default": "/etc/rancher/k3s/config.yaml",
            },
            "drop_in": {
                "type": "str",
            },
            "role": {
                "type": "str",
                "required": True,
                "choices": ["server", "agent"],
            },
            "config": {
                "type": "dict",
                "default": {},
            },
            "token": {
                "type": "str",
                "no_log": True,
            },
            "server": {
                "type": "str",
            },
            "cluster_init": {
                "type": "bool",
            },
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "backup": {
                "type": "bool",
                "default": False,
            },
        },
        mutually_exclusive=[
            ["server", "cluster_init"],
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_config runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
