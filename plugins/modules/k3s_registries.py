#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_registries is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_config on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_registries
short_description: Render k3s's private registry configuration (registries.yaml) on
  a node
version_added: 0.1.0
description:
- 'Writes C(/etc/rancher/k3s/registries.yaml): the registry mirrors (endpoints and
  image name rewrites) and, per registry, the credentials and TLS files containerd
  uses to pull through k3s.'
- Every field is checked against k3s's schema (a misspelt key is named, with the key
  it is one slip from), endpoints must be http or https URLs, rewrites valid regular
  expressions, TLS files absolute paths.
- The file is canonical (keys sorted), written atomically, mode 0600 and owned by
  root, because it holds the registry credentials; C(restart_needed) says when k3s
  must restart to read it.
- 'Served by the k3s_config binary: a node needs no Python and receives no other binary.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  backup:
    description:
    - Keep a copy of the old file, named C(<file>.<pid>.<timestamp>~), before replacing
      or removing it.
    type: bool
    default: false
  configs:
    description:
    - 'Per registry host or mirror endpoint host: C(auth) (C(username), C(password),
      C(auth), C(identity_token): what k3s reads; a C(token) key, which k3s ignores
      and would pull without credentials, is refused) and C(tls) (C(ca_file), C(cert_file),
      C(key_file), C(insecure_skip_verify)).'
    - 'C(tls) may give the PEM content instead of a path on the node: C(ca), C(cert),
      C(key) (a node without Python cannot receive a file through M(ansible.builtin.copy)).
      The module writes them, 0600 root, to C(registries-tls/<registry>/ca.crt), C(client.crt)
      and C(client.key) beside C(path), points the file at them, and removes the files
      there that no registry gives any more.'
    - The secret fields, and C(key), are never shown.
    type: dict
    default: {}
  mirrors:
    description:
    - 'Per registry host (C(docker.io), C(registry.example.com:5000), or C(*) for
      every registry): C(endpoint), the list of mirror URLs tried in order (a URL
      holding credentials is refused: containerd does not use them; they go in C(configs);
      their password is masked in every form), and C(rewrite), a dict of regular expression
      to replacement for the image name.'
    type: dict
    default: {}
  path:
    description:
    - The registries file.
    type: path
    default: /etc/rancher/k3s/registries.yaml
  state:
    description:
    - C(absent) removes the file.
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
notes:
- 'k3s reads registries.yaml only when it starts: act on C(restart_needed) by restarting
  the k3s service (role k8s_cluster does).'
- 'In diffs the values of C(password), C(auth) and C(identity_token) are replaced
  by C(<redacted>), and on the new side by C(<redacted, changed>) where the value
  changed; nothing derived from them is shown, and they are masked in the result like
  a no_log option. A file already on the node is parsed to find them whatever its
  style, as M(gitops.k3s_flux.k3s_config) does (C(<not shown: does not parse>) when
  it does not parse).'
"""

EXAMPLES = r"""
- name: Pull Docker Hub images through a local mirror that needs a login
  gitops.k3s_flux.k3s_registries:
    mirrors:
      docker.io:
        endpoint:
          - https://registry.example.internal:5000
    configs:
      registry.example.internal:5000:
        auth:
          username: k3s
          password: "{{ registry_password }}"
        tls:
          ca_file: /etc/ssl/certs/example-ca.pem
  register: registries
"""

RETURN = r"""
backup_file:
  description:
  - The copy of the old file, when C(backup) made one.
  returned: changed and backup is true
  type: str
  sample: /etc/rancher/k3s/registries.yaml.4242.2026-12-02@10:00:00~
checksum:
  description:
  - sha256 of the rendered content with the secret values left out, so that it cannot
    be used to test a guessed secret.
  returned: when state is present
  type: str
  sample: 0b5d7c7b3f5a8d0e2c1f4a6b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d
path:
  description:
  - The file written or removed.
  returned: always
  type: str
  sample: /etc/rancher/k3s/registries.yaml
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
                "default": "/etc/rancher/k3s/registries.yaml",
            },
            "mirrors": {
                "type": "dict",
                "default": {},
            },
            "configs": {
                "type": "dict",
                "default": {},
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
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_registries runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
