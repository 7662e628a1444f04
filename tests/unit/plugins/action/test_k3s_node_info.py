# Unit tests of k3s_node_info's action plugin: a result that holds a secret is printed censored.
from __future__ import annotations

import unittest

from ansible.playbook.task import Task
from ansible_collections.gitops.k3s_flux.plugins.action.k3s_node_info import add_finding, asks_for_secrets, clock_finding, hide_secrets
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.ansible_private import CORE


def as_callbacks_see_it(result):
    """The copy of a task's result that the callbacks print: ansible-core 2.14's
    TaskResult.clean_copy, 2.19's _RawTaskResult.as_callback_task_result."""
    if CORE >= (2, 19):
        from ansible.executor.task_result import _RawTaskResult

        return _RawTaskResult("node1", Task(), result, {}).as_callback_task_result().result
    from ansible.executor.task_result import TaskResult

    return TaskResult("node1", Task(), result, {}).clean_copy()._result


class HideSecrets(unittest.TestCase):
    def test_marks(self):
        for name, result, want in [
            ("token", {"version": "v1", "token": "K10::server:s3cret"}, True),
            ("kubeconfig", {"version": "v1", "kubeconfig": "apiVersion: v1"}, True),
            ("neither", {"version": "v1", "units": {}}, False),
            ("a failed read", {"failed": True, "msg": "read the node token /x: no such file or directory"}, False),
        ]:
            with self.subTest(name):
                self.assertEqual(hide_secrets(dict(result)).get("_ansible_no_log", False), want)

    def test_asks_for_secrets(self):
        for args, want in [
            ({"return_token": True}, True),
            ({"return_kubeconfig": "yes"}, True),
            ({"return_token": False, "return_kubeconfig": "false"}, False),
            ({}, False),
        ]:
            with self.subTest(args=args):
                self.assertEqual(asks_for_secrets(args), want)

    def test_callbacks_print_it_censored(self):
        # What the callbacks receive: the task's own no_log is off, the action's mark censors.
        result = hide_secrets({"version": "v1", "token": "K10::server:s3cret", "changed": False})
        printed = as_callbacks_see_it(result)
        self.assertNotIn("s3cret", repr(printed))
        self.assertIn("censored", printed)


class Clock(unittest.TestCase):
    def test_clock_finding(self):
        for name, node, seen in [
            ("in step", 1005.0, None),
            ("5 s behind, the limit", 995.0, None),
            ("60 s behind", 940.0, "the node's clock is 60 s behind the Ansible controller's"),
            # The task took 3 s: a node 4 s after the controller's start is not ahead.
            ("within the task's own time", 1007.0, None),
            ("a minute ahead", 1063.0, "the node's clock is 60 s ahead of the Ansible controller's"),
            ("no time returned", None, None),
        ]:
            with self.subTest(name):
                got = clock_finding(1000.0, 1003.0, node)
                self.assertEqual(got and got["seen"], seen)
                if got:
                    self.assertEqual(got["check"], "clock")
                    self.assertEqual(got["severity"], "error")
                    self.assertIn("timedatectl set-ntp true", got["fix"])
                    self.assertEqual(got["round_trip"], 3.0)

    def test_add_finding(self):
        finding = {"check": "clock", "severity": "error", "seen": "the node's clock is 60 s behind", "fix": "sync it"}
        got = add_finding({"preflight": []}, dict(finding), {"role": "agent"})
        self.assertTrue(got["failed"])
        self.assertEqual(got["msg"], "this host is not ready for k3s as an agent (nothing was changed): clock: the node's clock is 60 s behind. Fix: sync it")
        got = add_finding({"failed": True, "msg": "this host is not ready for k3s as a server (nothing was changed): swap: x. Fix: y"},
                          dict(finding), {"role": "server"})
        self.assertEqual(got["msg"], "this host is not ready for k3s as a server (nothing was changed): swap: x. Fix: y; "
                                     "clock: the node's clock is 60 s behind. Fix: sync it")
        got = add_finding({}, dict(finding), {"role": "server", "mode": "warn"})
        self.assertNotIn("failed", got)
        self.assertEqual(got["warnings"], ["not ready for k3s (error): clock: the node's clock is 60 s behind. Fix: sync it"])
        self.assertEqual(len(got["preflight"]), 1)


if __name__ == "__main__":
    unittest.main()
