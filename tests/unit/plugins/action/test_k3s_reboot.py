# Unit tests of k3s_reboot's action plugin: the wait for a new boot id.
from __future__ import annotations

import os
import tempfile
import unittest

from ansible_collections.gitops.k3s_flux.plugins.action.k3s_reboot import reset_quietly, wait_for_new_boot
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader


class Clock:
    """A clock that moves only when slept on."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def answers(*replies):
    """read_boot_id answering each of replies in turn (an exception is raised), the last for ever."""
    replies = list(replies)

    def read():
        reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply
    return read


class WaitForNewBoot(unittest.TestCase):
    def test_cases(self):
        down = ConnectionError("ssh: connect to host 10.0.0.12 port 22: Connection refused")
        for name, read, want, why in [
            ("still up, then down, then back", answers("old", down, down, "new"), "new", None),
            ("back at once", answers("new"), "new", None),
            ("never back", answers("old", down), None, "ssh: connect to host 10.0.0.12 port 22: Connection refused"),
            ("never went down", answers("old"), None, "the host kept its boot id old (it never went down)"),
            ("an empty answer is not a boot", answers("", "new"), "new", None),
        ]:
            with self.subTest(name):
                clock = Clock()
                got, reason = wait_for_new_boot(read, "old", 10, clock=clock, sleep=clock.sleep)
                self.assertEqual(got, want)
                self.assertEqual(reason, why)
                if want is None:
                    self.assertGreaterEqual(clock.now, 10)


class Display:
    """Records the warnings and -vvv lines that would be shown; shows nothing else."""
    verbosity = 0

    def __init__(self):
        self.warnings, self.verbose = [], []

    def __getattr__(self, name):
        return lambda *args, **kwargs: None

    def warning(self, msg, *args, **kwargs):
        self.warnings.append(msg)

    def vvv(self, msg, *args, **kwargs):
        self.verbose.append(msg)


# An ssh whose master connection is there for `ssh -O check` and gone by `ssh -O stop`, as when the
# host goes down between the two; its last line is what OpenSSH says then.
FAKE_SSH = """#!/bin/sh
case "$*" in
  *"-O check"*) echo "Master running (pid=4242)" >&2; exit 0 ;;
  *"-O stop"*) echo "%s" >&2; exit 255 ;;
esac
exit 1
"""


class ResetQuietly(unittest.TestCase):
    def ssh_reset(self, reset):
        """reset(connection, display) on Ansible's own ssh connection plugin, through FAKE_SSH, with
        what the plugin shows recorded; the recording."""
        from ansible.plugins.connection import ssh
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ssh")
            with open(path, "w") as f:
                f.write(FAKE_SSH % "Control socket connect(/tmp/cp/6b1f): No such file or directory")
            os.chmod(path, 0o755)
            connection = connection_loader.get("ssh", PlayContext(), None)
            connection.set_options(direct={"host": "node2", "ssh_executable": path, "control_path_dir": d})
            shown, real = Display(), ssh.display
            ssh.display = shown
            try:
                reset(connection, shown)
            finally:
                ssh.display = real
            self.assertFalse(connection.connected)
            return shown

    def test_the_master_ended_meanwhile(self):
        alone = self.ssh_reset(lambda c, shown: c.reset())
        self.assertEqual(alone.warnings, ["Failed to reset connection:Control socket connect(/tmp/cp/6b1f): No such file or directory\n"],
                         "the ssh plugin warns, alone")
        quiet = self.ssh_reset(reset_quietly)
        self.assertEqual(quiet.warnings, [], "not through reset_quietly")
        self.assertEqual(quiet.verbose[-1], "Failed to reset connection:Control socket connect(/tmp/cp/6b1f): No such file or directory "
                         "(the host is going down for its reboot)")

    def test_other_warnings_shown(self):
        class Connection:
            def reset(self):
                shown.warning("Reset is not implemented for this connection")
        shown = Display()
        reset_quietly(Connection(), display=shown)
        self.assertEqual(shown.warnings, ["Reset is not implemented for this connection"])
        self.assertNotIn("warning", vars(shown), "the display's own warning is back")

    def test_one_display(self):
        # What reset_quietly filters by default is what the ssh plugin warns through.
        from ansible.plugins.connection import ssh
        from ansible_collections.gitops.k3s_flux.plugins.action import k3s_reboot as ours
        self.assertIs(ours.display, ssh.display)


if __name__ == "__main__":
    unittest.main()
