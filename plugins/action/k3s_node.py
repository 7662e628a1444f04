# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gitops.k3s_flux.k3s_node: runs on the controller (the node needs no Python).

It sends the module binary built for the host's OS and CPU (BinaryModuleAction). With the
options k3s_config and k3s_registries it first runs those modules on the node, in this one task
(a task costs Ansible more than a module run does), and restarts k3s when either says
restart_needed; their results come back under their names, their diffs before this module's.
The module decides whether k3s must be installed. Only when it must, from airgap files that are
still on the controller, does it answer airgap_transfer_needed; this plugin then copies the files
through the connection into the task's temporary directory and runs the module again with
remote_src, and the module checks each file against its sha256 on the node before use.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction

AIRGAP_FILES = ("airgap_binary", "airgap_script", "airgap_images")
MODULE = "gitops.k3s_flux.k3s_node"
# The options that run another module first: option name = module name.
RENDERERS = ("k3s_config", "k3s_registries")


class ActionModule(BinaryModuleAction):
    # The temporary directory is made only when files must be sent (an airgap install), so a
    # pipelined task that installs nothing stays one command on the node.
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        base = self._begin(tmp, task_vars)
        del tmp
        if base.get("failed"):
            return base
        args = dict(self._task.args)
        rendered = {}
        try:
            for option in RENDERERS:
                sub_args = args.pop(option, None)
                if sub_args is None:
                    continue
                if not isinstance(sub_args, dict):
                    return dict(base, failed=True, msg="%s: expected a dict (the arguments of module gitops.k3s_flux.%s), got %s"
                                % (option, option, type(sub_args).__name__))
                rendered[option] = self._execute_module(module_name="gitops.k3s_flux." + option, module_args=dict(sub_args), task_vars=task_vars)
                if rendered[option].get("failed"):
                    return merge(base, rendered, None)
            if any(r.get("restart_needed") for r in rendered.values()):
                args["restart"] = True
            return merge(base, rendered, self._install(args, task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _install(self, args, task_vars):
        """The k3s_node module's result; for an airgap install from the controller, its second
        run, after the files were copied."""
        result = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if not result.get("airgap_transfer_needed") or args.get("remote_src"):
            return result
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        staged = dict(args, remote_src=True)
        for option in AIRGAP_FILES:
            if not args.get(option):
                continue
            try:
                local = self._find_needle("files", args[option])
            except AnsibleActionFail as e:
                raise AnsibleActionFail("%s: %s" % (option, e.message))
            remote = self._connection._shell.join_path(tmpdir, "airgap-" + os.path.basename(local))
            self._transfer_file(local, remote)
            staged[option] = remote
        # The module file and its args, when Ansible sends them, are put in tmpdir again;
        # their permissions are fixed then, the files' here.
        self._fixup_perms2([tmpdir] + [staged[o] for o in AIRGAP_FILES if args.get(o)])
        return self._execute_module(module_name=MODULE, module_args=staged, task_vars=task_vars)


def merge(base, rendered, installed):
    """One task result from the renderers' results (option -> result) and the k3s_node module's
    (None when a renderer failed, which then fails the task naming its option). Each module
    masked its own secrets in its invocation, so the task's invocation is made of theirs."""
    result = dict(base)
    diffs, warnings, invocation = [], [], {}

    def take(res):
        """res without its diff, warnings and invocation, which go to the task's; and its args."""
        res = dict(res)
        diff = res.pop("diff", None)
        diffs.extend(diff if isinstance(diff, list) else [diff] if diff else [])
        warnings.extend(res.pop("warnings", None) or [])
        return res, (res.pop("invocation", None) or {}).get("module_args", {})

    for option, res in rendered.items():
        result[option], invocation[option] = take(res)
    changed = any(r.get("changed") for r in rendered.values())
    if installed is None:
        option, res = list(rendered.items())[-1]
        result.update(failed=True, msg="%s: %s" % (option, res.get("msg", "failed")), changed=changed)
    else:
        installed, node_args = take(installed)
        invocation = dict(node_args, **invocation)
        result.update(installed)
        result["changed"] = bool(installed.get("changed")) or changed
    if diffs:
        result["diff"] = diffs
    if warnings:
        result["warnings"] = warnings
    result["invocation"] = {"module_args": invocation}
    return result
