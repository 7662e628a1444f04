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

With `preflight`, it also checks the node's clock against this controller's (clock_finding): the
module returns the node's time, and the controller's clock is read before and after the module
ran, so that the time the task took never counts against the node.
"""

from __future__ import annotations

import time

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import ansible_private
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction

SECRETS = ("token", "kubeconfig")
# Seconds a node's clock may be off the controller's: k3s's certificates and etcd's leases assume
# clocks that agree (etcd warns from one second).
CLOCK_LIMIT = 5.0
CLOCK_FIX = ("turn on time synchronisation (timedatectl set-ntp true, with systemd-timesyncd, or chrony) and check "
             "the time zone is not taken for the clock; a Raspberry Pi has no battery-backed clock and starts with the "
             "time it last saved, until NTP answers")


def asks_for_secrets(args):
    """True when the module's args ask for the token or the kubeconfig."""
    return any(boolean(args.get("return_" + key, False), strict=False) for key in SECRETS)


def hide_secrets(result):
    """Marks result no_log when it holds a secret; returns it."""
    if any(key in result for key in SECRETS):
        result["_ansible_no_log"] = True
    return result


def clock_finding(before, after, node_time, limit=CLOCK_LIMIT):
    """The clock finding (a dict as the module's findings) for a node whose clock read node_time
    while the controller's went from before to after; None when they agree within limit. The node
    is behind only by how far node_time is before `before`, ahead only by how far it is after
    `after`: the time between counts in its favour. `round_trip` is that time (seconds): the
    node's real offset is the one seen, or up to round_trip more."""
    if node_time is None:
        return None
    if node_time < before - limit:
        seen = "the node's clock is %.0f s behind the Ansible controller's" % (before - node_time)
    elif node_time > after + limit:
        seen = "the node's clock is %.0f s ahead of the Ansible controller's" % (node_time - after)
    else:
        return None
    return {"check": "clock", "severity": "error", "seen": seen, "fix": CLOCK_FIX, "round_trip": round(after - before, 1)}


def add_finding(result, finding, preflight):
    """Adds finding to result as the module adds its own: to `preflight`; in strict mode, an
    error fails the task, its message joined to the module's."""
    result.setdefault("preflight", []).append(finding)
    text = "%s: %s. Fix: %s" % (finding["check"], finding["seen"], finding["fix"])
    if preflight.get("mode", "strict") != "strict":
        result.setdefault("warnings", []).append("not ready for k3s (%s): %s" % (finding["severity"], text))
        return result
    if result.get("failed"):
        result["msg"] = "%s; %s" % (result.get("msg", ""), text)
        return result
    role = preflight.get("role", "")
    result.update(failed=True, msg="this host is not ready for k3s as %s %s (nothing was changed): %s" % (
        "an" if role == "agent" else "a", role, text))
    return result


class ActionModule(BinaryModuleAction):
    def run(self, tmp=None, task_vars=None):
        if asks_for_secrets(self._task.args):
            ansible_private.censor_connection(self)
        before = time.time()
        result = super().run(tmp, task_vars)
        after = time.time()
        preflight = self._task.args.get("preflight")
        if isinstance(preflight, dict):
            finding = clock_finding(before, after, result.get("node_time"))
            if finding:
                add_finding(result, finding, preflight)
        return hide_secrets(result)
