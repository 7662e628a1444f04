# Unit tests of k3s_reboot's action plugin: the wait for a new boot id.
from __future__ import annotations

import unittest

from ansible_collections.gitops.k3s_flux.plugins.action.k3s_reboot import wait_for_new_boot


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


if __name__ == "__main__":
    unittest.main()
