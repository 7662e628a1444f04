#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_prepare is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_prepare
short_description: 'Make a host ready for k3s: the memory cgroup on a Raspberry Pi''s
  kernel command line, the kernel modules loaded at boot'
version_added: 0.1.0
description:
- Without the memory cgroup controller, adds C(cgroup_memory=1 cgroup_enable=memory)
  to the Raspberry Pi's C(cmdline.txt) (C(/boot/firmware/cmdline.txt) on Pi OS Bookworm
  and Ubuntu, C(/boot/cmdline.txt) before), once, keeping the rest of its single line;
  returns C(reboot_required) until the host runs with it.
- 'Fails, changing nothing and asking for no reboot, when a reboot would not bring
  the memory cgroup: a C(cmdline.txt) whose first line (the only one the firmware
  reads) is empty or has no C(root=); one with C(cgroup_disable=memory) (remove it,
  then run again); and a kernel that booted with the cgroup words (its C(/proc/cmdline))
  and still lacks it (a kernel built without it). Asking for a reboot then would reboot
  the host on every run.'
- Writes C(/etc/modules-load.d/k3s.conf) with the kernel modules k3s needs and loads
  those not loaded yet (C(modprobe)).
- 'Writes C(/etc/sysctl.d/99-k3s.conf) with C(net.ipv4.ip_forward), C(net.bridge.bridge-nf-call-iptables)
  and C(net.bridge.bridge-nf-call-ip6tables) at 1, and sets those not set yet: k3s
  sets them when it starts, but a later C(sysctl --system) (a package upgrade, ufw''s
  reload) would apply a file that turns forwarding off.'
- 'Idempotent; C(--check --diff) shows each file''s edit. A Go binary: the node needs
  no Python.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  modules:
    description:
    - The kernel modules to load now and at boot.
    type: list
    elements: str
    default:
    - overlay
    - br_netfilter
    - vxlan
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
- name: Prepare a Raspberry Pi for k3s
  gitops.k3s_flux.k3s_prepare:
  become: true
  register: prepared

- name: Say which host must reboot
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }} must reboot for the memory cgroup"
  when: prepared.reboot_required
"""

RETURN = r"""
not_prepared:
  description:
  - What preparation cannot do on this host, with what to do by hand.
  returned: always
  type: list
  sample: []
reboot_required:
  description:
  - 'The kernel runs without the memory cgroup and its command line, as changed now
    or since the kernel booted, enables it at the next boot. Never true for a kernel
    that booted with the words and still lacks it: the task fails instead.'
  returned: always
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "modules": {
                "type": "list",
                "elements": "str",
                "default": ["overlay", "br_netfilter", "vxlan"],
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_prepare runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
