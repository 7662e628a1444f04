# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gitops.k3s_flux.k3s_reboot: a reboot without Python on the host.

The module (the k3s_node binary, plugin_utils/registry.py) reads the boot id and schedules the
reboot a second after it returns. This plugin then reconnects until the host answers with
another boot id: `cat /proc/sys/kernel/random/boot_id`, a raw command, so nothing on the host
needs Python (ansible.builtin.reboot asks the host for its distribution through a Python module
first).
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleError
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import BinaryModuleAction, display

BOOT_ID = "cat /proc/sys/kernel/random/boot_id"
DEFAULT_TIMEOUT = 600
# Between attempts: a host going down refuses or drops connections at once.
POLL = 1.0
# What the ssh connection plugin warns when its master connection ends between its `ssh -O check`
# and its `ssh -O stop` (reset): while the host goes down for its reboot, that is what is awaited.
RESET_RACE = "Failed to reset connection"


def wait_for_new_boot(read_boot_id, before, timeout, clock=time.monotonic, sleep=time.sleep):
    """Calls read_boot_id (which raises while the host cannot be reached) until it answers
    something other than before. Returns (the new boot id, None), or (None, why) once timeout
    seconds have passed: the last error, or that the host kept its boot id."""
    deadline = clock() + timeout
    last = "the host kept its boot id %s (it never went down)" % before
    while True:
        sleep(POLL)
        try:
            now = read_boot_id()
        except Exception as e:  # any failure to reach the host is a reason to try again
            last = str(e).strip() or type(e).__name__
        else:
            if now and now != before:
                return now, None
            if now:
                last = "the host kept its boot id %s (it never went down)" % before
        if clock() >= deadline:
            return None, last


def reset_quietly(connection, display=display):
    """connection.reset(), with the ssh plugin's warning that the connection it resets has just
    ended shown at -vvv instead: the host is going down, as it should, and the next attempt
    connects anew. Any other warning is shown as it was."""
    warning, own = display.warning, "warning" in vars(display)

    def filtered(msg, *args, **kwargs):
        if str(msg).startswith(RESET_RACE):
            display.vvv("%s (the host is going down for its reboot)" % str(msg).strip())
            return
        warning(msg, *args, **kwargs)

    display.warning = filtered
    try:
        connection.reset()
    finally:
        if own:
            display.warning = warning
        else:
            del display.warning


class ActionModule(BinaryModuleAction):

    def run(self, tmp=None, task_vars=None):
        result = self._begin(tmp, task_vars)
        if result.get("failed"):
            return result
        start = time.monotonic()
        result.update(self._execute_module(module_name=self._task.action, module_args=self._task.args, task_vars=task_vars))
        if result.get("failed") or self._task.check_mode:
            return result
        timeout = int(self._task.args.get("reboot_timeout", DEFAULT_TIMEOUT))
        before = result.get("previous_boot_id")
        boot_id, why = wait_for_new_boot(self._read_boot_id, before, timeout)
        if boot_id is None:
            result.update(failed=True, msg="%s did not come back from its reboot (%s) within reboot_timeout (%d s): %s" % (
                self._task_vars.get("inventory_hostname", "the host"), result.get("command"), timeout, why))
            return result
        result.update(rebooted=True, boot_id=boot_id, elapsed=int(round(time.monotonic() - start)))
        return result

    def _read_boot_id(self):
        """The host's boot id over a new connection (the old one went with the reboot)."""
        reset_quietly(self._connection)
        res = self._low_level_execute_command(BOOT_ID, sudoable=False)
        if res.get("rc") != 0:
            raise AnsibleError("%s: rc %s: %s" % (BOOT_ID, res.get("rc"), (res.get("stderr") or res.get("stdout") or "").strip()))
        return res.get("stdout", "").strip()
