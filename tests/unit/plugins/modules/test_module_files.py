# Unit tests of the modules' Python files (plugins/modules/<name>.py, generated from each Go spec):
# every EXAMPLES task of a module passes Ansible's own AnsibleModule validation against the file's
# argument spec, and the file, run as a module, then fails saying that its action plugin runs it.
from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import unittest

import yaml

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

COLLECTION = "gitops.k3s_flux"
MODULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "plugins", "modules")


def module_names():
    return sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py"))


class Captured(Exception):
    pass


def argument_spec(mod):
    """The keyword arguments main() gives AnsibleModule."""
    seen = {}

    def capture(**kwargs):
        seen.update(kwargs)
        raise Captured()

    original = mod.AnsibleModule
    mod.AnsibleModule = capture
    try:
        with contextlib.suppress(Captured):
            mod.main()
    finally:
        mod.AnsibleModule = original
    return seen


def placeholder(spec, value):
    """A value of the option's type in place of a Jinja template, which only a play resolves."""
    if isinstance(value, str) and "{{" in value:
        if spec.get("choices"):
            return spec["choices"][0]
        return {"int": 1, "float": 1.0, "bool": True, "list": [], "dict": {}}.get(spec.get("type", "str"), "templated")
    if isinstance(value, dict) and spec.get("options"):
        return resolved(spec["options"], value)
    if isinstance(value, list) and spec.get("options"):
        return [resolved(spec["options"], v) if isinstance(v, dict) else v for v in value]
    if isinstance(value, list):
        return [placeholder({"type": spec.get("elements", "str")}, v) for v in value]
    return value


def resolved(options, args):
    out = {}
    for key, value in args.items():
        spec = options.get(key) or next((o for o in options.values() if key in o.get("aliases", [])), {})
        out[key] = placeholder(spec, value)
    return out


def run_main(mod, args):
    """main() as Ansible runs a module: its result, from stdout."""
    basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    if hasattr(basic, "_ANSIBLE_PROFILE"):  # ansible-core 2.19 decodes the args by a named profile
        basic._ANSIBLE_PROFILE = "legacy"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            mod.main()
    finally:
        basic._ANSIBLE_ARGS = None
    return json.loads(out.getvalue())


class ModuleFiles(unittest.TestCase):
    def test_every_module_has_a_file(self):
        self.assertEqual(len(module_names()), 18)

    def test_examples_pass_ansibles_validation(self):
        for name in module_names():
            with self.subTest(module=name):
                mod = importlib.import_module("ansible_collections.gitops.k3s_flux.plugins.modules." + name)
                options = argument_spec(mod)["argument_spec"]
                tasks = [t for t in yaml.safe_load(mod.EXAMPLES) if name in t or f"{COLLECTION}.{name}" in t]
                self.assertTrue(tasks, f"{name}: no example calls the module")
                for task in tasks:
                    args = task.get(name, task.get(f"{COLLECTION}.{name}")) or {}
                    result = run_main(mod, resolved(options, args))
                    self.assertTrue(result.get("failed"), result)
                    self.assertIn("runs as a Go binary through its action plugin", result["msg"], f"{name}: example {task.get('name')}")

    def test_a_bad_argument_fails_validation(self):
        mod = importlib.import_module("ansible_collections.gitops.k3s_flux.plugins.modules.node_drain")
        result = run_main(mod, {"name": "node1", "state": "drained"})
        self.assertTrue(result.get("failed"))
        self.assertIn("state", result["msg"])
        self.assertNotIn("action plugin", result["msg"])


if __name__ == "__main__":
    unittest.main()
