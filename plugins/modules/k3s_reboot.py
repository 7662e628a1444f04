#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_reboot is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_reboot
short_description: Reboot a host without Python and wait until it is back with a new
  boot id
version_added: 0.1.0
description:
- Schedules the reboot on the host (C(systemctl reboot) where systemd runs, else C(reboot),
  as on OpenRC), a second after the module has returned, so that its answer reaches
  Ansible before the connection goes.
- The action plugin then reconnects until the host answers with a boot id (C(/proc/sys/kernel/random/boot_id))
  other than the one before, failing after O(reboot_timeout) seconds, naming the host
  and the last connection error.
- 'Unlike M(ansible.builtin.reboot), nothing on the host needs Python: the module
  is a Go binary and the wait reads the boot id with C(cat).'
- In check mode nothing is scheduled and the task reports the reboot it would make
  (changed).
- Role k8s_cluster reboots this way, one host at a time, the hosts C(k8s_cluster_prepare)
  changed so that their kernel enables the memory cgroup; playbook reboot does a rolling
  reboot of a cluster's nodes, each drained first.
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  reboot_timeout:
    description:
    - Seconds to wait for the host to come back with a new boot id.
    type: int
    default: 600
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
- Not for the Ansible controller itself (a local connection).
"""

EXAMPLES = r"""
- name: Reboot the host, one at a time, and wait until it is back
  gitops.k3s_flux.k3s_reboot:
    reboot_timeout: 900
  become: true
  throttle: 1
"""

RETURN = r"""
boot_id:
  description:
  - The boot id after the reboot.
  returned: when rebooted
  type: str
  sample: 8e1f0b7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b
command:
  description:
  - 'What the reboot was (in check mode: would be) scheduled with.'
  returned: always
  type: str
  sample: systemctl reboot
elapsed:
  description:
  - Seconds from the module's start to the host's answer with the new boot id.
  returned: when rebooted
  type: int
  sample: 42
previous_boot_id:
  description:
  - The boot id before the reboot.
  returned: always
  type: str
  sample: 2d5a3c3e-6f1d-4c0e-9a8b-5b1e0d1c2f3a
rebooted:
  description:
  - Whether the host rebooted (false in check mode).
  returned: always
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "reboot_timeout": {
                "type": "int",
                "default": 600,
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_reboot runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
