# Unit tests of k3s_node_info's action plugin: a result that holds a secret is printed censored.
from __future__ import annotations

import unittest

from ansible.executor.task_result import TaskResult
from ansible.playbook.task import Task
from ansible_collections.gitops.k3s_flux.plugins.action.k3s_node_info import asks_for_secrets, hide_secrets


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
        printed = TaskResult("node1", Task(), result, {}).clean_copy()._result
        self.assertNotIn("s3cret", repr(printed))
        self.assertIn("censored", printed)


if __name__ == "__main__":
    unittest.main()
