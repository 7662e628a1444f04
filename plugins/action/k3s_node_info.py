# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gitops.k3s_flux.k3s_node_info: sends the binary built for the host's OS and
CPU, and keeps the node token and the admin kubeconfig out of every log.

When either is asked for, the connection runs with no_log (ssh's -vvv then prints the command's
output censored), and a result that holds either is marked `_ansible_no_log`, which Ansible lets an
action set: the callbacks print it censored, at every verbosity, as for `no_log: true`, while the
registered variable keeps the values for the tasks that need them. A failed read returns no
secret (the module reads both files before it returns either), so its message stays visible: the
task needs no `no_log`, and no second task to report the failure.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction

SECRETS = ("token", "kubeconfig")


def asks_for_secrets(args):
    """True when the module's args ask for the token or the kubeconfig."""
    return any(boolean(args.get("return_" + key, False), strict=False) for key in SECRETS)


def hide_secrets(result):
    """Marks result no_log when it holds a secret; returns it."""
    if any(key in result for key in SECRETS):
        result["_ansible_no_log"] = True
    return result


class ActionModule(BinaryModuleAction):
    def run(self, tmp=None, task_vars=None):
        if asks_for_secrets(self._task.args):
            # The connection has its own copy of the play context: its no_log censors -vvv.
            self._connection._play_context.no_log = True
        return hide_secrets(super().run(tmp, task_vars))
