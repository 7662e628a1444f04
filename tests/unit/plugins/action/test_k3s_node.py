# Unit tests of k3s_node's action plugin: the one task result made of k3s_config's,
# k3s_registries' and k3s_node's.
from __future__ import annotations

import unittest

from ansible_collections.gitops.k3s_flux.plugins.action.k3s_node import merge

CONFIG = {"changed": True, "restart_needed": True, "node_name": "node1", "diff": {"before": "a", "after": "b"},
          "warnings": ["w1"], "invocation": {"module_args": {"role": "server", "token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}}}
REGISTRIES = {"changed": False, "restart_needed": False, "invocation": {"module_args": {"mirrors": {}}}}
NODE = {"changed": True, "version": "v1", "diff": {"before": "k3s: none", "after": "k3s: v1"},
        "invocation": {"module_args": {"role": "server", "restart": True}}}


class Merge(unittest.TestCase):
    def test_all_three(self):
        result = merge({}, {"k3s_config": dict(CONFIG), "k3s_registries": dict(REGISTRIES)}, dict(NODE))
        self.assertTrue(result["changed"])
        self.assertEqual(result["version"], "v1")
        self.assertEqual(result["k3s_config"]["node_name"], "node1")
        self.assertNotIn("diff", result["k3s_config"])
        self.assertNotIn("invocation", result["k3s_config"])
        # The renderers' diffs first, in order; their warnings on the task.
        self.assertEqual([d["after"] for d in result["diff"]], ["b", "k3s: v1"])
        self.assertEqual(result["warnings"], ["w1"])
        # The invocation is the modules' own, masked by them.
        args = result["invocation"]["module_args"]
        self.assertEqual(args["k3s_config"]["token"], "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER")
        self.assertEqual(args["restart"], True)
        self.assertEqual(args["k3s_registries"], {"mirrors": {}})

    def test_changed_by_a_renderer_only(self):
        result = merge({}, {"k3s_config": dict(CONFIG, changed=True)}, dict(NODE, changed=False, diff=None))
        self.assertTrue(result["changed"])
        result = merge({}, {"k3s_config": dict(CONFIG, changed=False)}, dict(NODE, changed=False))
        self.assertFalse(result["changed"])

    def test_a_renderer_fails(self):
        failed = {"failed": True, "msg": "config.node-label: expected a list", "invocation": {"module_args": {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}}}
        result = merge({}, {"k3s_config": failed}, None)
        self.assertTrue(result["failed"])
        self.assertFalse(result["changed"])
        self.assertEqual(result["msg"], "k3s_config: config.node-label: expected a list")
        self.assertEqual(result["invocation"]["module_args"], {"k3s_config": {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}})

    def test_no_renderer(self):
        result = merge({"ansible_facts": {"p": 1}}, {}, dict(NODE))
        self.assertEqual(result["ansible_facts"], {"p": 1})
        self.assertEqual(result["invocation"]["module_args"], NODE["invocation"]["module_args"])
        self.assertEqual(len(result["diff"]), 1)


if __name__ == "__main__":
    unittest.main()
