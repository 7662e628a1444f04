# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gitops.k3s_flux.k3s_node: runs on the controller (the node needs no Python).

It sends the module binary built for the host's OS and CPU (BinaryModuleAction); the module runs
k3s_config and k3s_registries itself when given their arguments (one command on the node). The
module decides whether k3s must be installed. Only when it must, from airgap files that are
still on the controller, does it answer airgap_transfer_needed, before it renders anything; this
plugin then copies the files through the connection into the task's temporary directory and runs
the module again with remote_src, and the module checks each file against its sha256 on the node
before use.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import ansible_private
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction

AIRGAP_FILES = ("airgap_binary", "airgap_script", "airgap_images")
MODULE = "gitops.k3s_flux.k3s_node"


class ActionModule(BinaryModuleAction):
    # The temporary directory is made only when files must be sent (an airgap install), so a
    # pipelined task that installs nothing stays one command on the node.
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = self._begin(tmp, task_vars)
        del tmp
        if result.get("failed"):
            return result
        try:
            result.update(self._install(dict(self._task.args), task_vars))
            return result
        finally:
            self._remove_tmp_path(ansible_private.shell_tmpdir(self))

    def _install(self, args, task_vars):
        """The k3s_node module's result; for an airgap install from the controller, its second
        run, after the files were copied."""
        result = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if not result.get("airgap_transfer_needed") or args.get("remote_src"):
            return result
        tmpdir = ansible_private.shell_tmpdir(self) or self._make_tmp_path()
        staged = dict(args, remote_src=True)
        for option in AIRGAP_FILES:
            if not args.get(option):
                continue
            try:
                local = self._find_needle("files", args[option])
            except AnsibleActionFail as e:
                raise AnsibleActionFail("%s: %s" % (option, e.message))
            remote = ansible_private.join_remote(self, tmpdir, "airgap-" + os.path.basename(local))
            self._transfer_file(local, remote)
            staged[option] = remote
        # The module file and its args, when Ansible sends them, are put in tmpdir again;
        # their permissions are fixed then, the files' here.
        self._fixup_perms2([tmpdir] + [staged[o] for o in AIRGAP_FILES if args.get(o)])
        return self._execute_module(module_name=MODULE, module_args=staged, task_vars=task_vars)
