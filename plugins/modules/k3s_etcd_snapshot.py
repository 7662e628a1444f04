#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_etcd_snapshot is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_etcd_snapshot
short_description: Take an etcd snapshot on a k3s server and list the kept ones
version_added: 0.1.0
description:
- Runs C(k3s etcd-snapshot save --name <name>) on a server whose k3s runs embedded
  etcd (C(cluster-init), or joined to such a server), then C(k3s etcd-snapshot ls),
  and returns the snapshot taken and every one k3s keeps.
- 'k3s names the file C(<name>-<node name>-<unix time>) and keeps it under the server''s
  C(etcd-snapshot-dir) (by default C(/var/lib/rancher/k3s/server/db/snapshots), 0600
  in a 0700 directory). k3s reads its config files for this as for the server, so
  the C(etcd-s3) settings given in role k8s_cluster''s C(k8s_cluster_server_config)
  (or C(k3s_config)) apply to it too: with C(etcd-s3) on, k3s uploads the snapshot
  to the bucket as well.'
- 'k3s''s own message is the module''s when it refuses (k3s not running, no embedded
  etcd: C(etcd database not found)); the values of C(token), C(agent-token) and the
  C(etcd-s3) credentials in k3s''s config files are masked in everything the module
  returns.'
- 'Always C(changed) (a snapshot is a new file); in check mode nothing is taken, and
  the kept ones are listed. A Go binary: the node needs no Python.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  name:
    description:
    - 'k3s''s C(--name) for the snapshot: lowercase letters, digits, C(-) and C(.),
      at most 100 characters (k3s appends C(-<node name>-<unix time>) and makes a
      file and a Kubernetes object name of it).'
    type: str
    required: true
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
"""

EXAMPLES = r"""
- name: Take a snapshot before a risky step
  gitops.k3s_flux.k3s_etcd_snapshot:
    name: pre-upgrade-v1.36.3-k3s1
  become: true
  register: snapshot

- name: Say where it is
  ansible.builtin.debug:
    msg: "{{ snapshot.snapshot.name }} at {{ snapshot.snapshot.location }}"
"""

RETURN = r"""
snapshot:
  description:
  - 'The snapshot taken (not returned in check mode): its C(name), C(location) (C(file://<path>)
    on the node, or C(s3://...)), C(size) in bytes and C(created) (RFC 3339), as C(k3s
    etcd-snapshot ls) lists it.'
  returned: success, not in check mode
  type: dict
  sample:
    created: "2026-12-05T04:00:00Z"
    location: file:///var/lib/rancher/k3s/server/db/snapshots/pre-upgrade-v1.36.3-k3s1-node1-1764900000
    name: pre-upgrade-v1.36.3-k3s1-node1-1764900000
    size: 4321280
snapshots:
  description:
  - 'Every snapshot k3s keeps, as C(k3s etcd-snapshot ls) lists them (the node''s,
    and with C(etcd-s3) on those in the bucket too, their C(location) C(s3://<bucket>/<key>):
    one taken with C(etcd-s3) is listed twice, at one time), oldest first. C(snapshot)
    is the node''s copy.'
  returned: success
  type: list
  sample:
  - created: "2026-12-05T00:00:00Z"
    location: file:///var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-node1-1764892800
    name: etcd-snapshot-node1-1764892800
    size: 4300800
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {
                "type": "str",
                "required": True,
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_etcd_snapshot runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
