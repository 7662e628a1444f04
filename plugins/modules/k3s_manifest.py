#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_manifest is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_manifest
short_description: Keep a manifest in a k3s server's auto-deploy directory
version_added: 0.1.0
description:
- Writes C(<data_dir>/server/manifests/<name>.yaml) on a k3s server, which k3s applies
  at start and whenever the file changes (k3s's auto-deploying manifests); role k8s_cluster
  places kube-vip there this way (C(k8s_cluster_api_vip)).
- The content must be YAML documents each with C(apiVersion), C(kind) and C(metadata.name),
  as k3s's deploy controller needs; anything else is refused before the file is touched.
  Written atomically, 0600 root; idempotent; C(--check --diff) shows the change.
- With C(state=absent) the file is removed; k3s then stops applying it but leaves
  the objects it made (delete them with kubectl), as k3s does.
- 'A Go binary: the node needs no Python.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  content:
    description:
    - 'The manifest: YAML documents separated by C(---). Required with C(state=present).'
    type: str
  data_dir:
    description:
    - k3s's C(data-dir).
    type: path
    default: /var/lib/rancher/k3s
  name:
    description:
    - 'The file''s name without C(.yaml): lowercase letters, digits and C(-).'
    type: str
    required: true
  state:
    description:
    - Whether the file is there.
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
- name: Deploy a ConfigMap with k3s
  gitops.k3s_flux.k3s_manifest:
    name: cluster-info
    content: |
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cluster-info
        namespace: kube-system
      data:
        site: home
  become: true
"""

RETURN = r"""
objects:
  description:
  - The objects the manifest holds, as C(kind/namespace/name) (C(kind/name) for a
    cluster-wide one).
  returned: with state=present
  type: list
  sample:
  - DaemonSet/kube-system/kube-vip-ds
path:
  description:
  - The manifest's file.
  returned: always
  type: str
  sample: /var/lib/rancher/k3s/server/manifests/kube-vip.yaml
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {
                "type": "str",
                "required": True,
            },
            "content": {
                "type": "str",
            },
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "data_dir": {
                "type": "path",
                "default": "/var/lib/rancher/k3s",
            },
        },
        required_if=[
            ("state", "present", ["content"]),
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_manifest runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
