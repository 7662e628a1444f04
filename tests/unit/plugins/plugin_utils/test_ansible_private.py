# Unit tests of the adapter to Ansible's private API, run on each ansible-core the tests use.
from __future__ import annotations

import dataclasses
import json
import unittest

from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import ansible_private
from ansible.release import __version__


@dataclasses.dataclass(frozen=True)
class Built:
    """The fields of ansible-core 2.19's _BuiltModule that with_binary replaces."""

    b_module_data: bytes
    module_style: str
    shebang: str


class CoreVersion(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(ansible_private.core_version("2.19.4"), (2, 19))
        self.assertEqual(ansible_private.core_version("2.14.18"), (2, 14))
        self.assertEqual(ansible_private.core_version("2.20.0.dev0"), (2, 20))
        with self.assertRaises(ValueError):
            ansible_private.core_version("devel")

    def test_this_one(self):
        self.assertEqual(ansible_private.CORE, ansible_private.core_version(__version__))
        self.assertEqual(ansible_private.PROFILE is not None, ansible_private.CORE >= (2, 19))


class WithBinary(unittest.TestCase):
    def test_shape_of_this_version(self):
        if ansible_private.CORE >= (2, 19):
            built, path = ansible_private.with_binary((Built(b"#!/usr/bin/python", "new", "#!/usr/bin/python"), "/stub"), b"\x7fELF", "/bin/x")
            self.assertEqual((built.b_module_data, built.module_style, built.shebang, path), (b"\x7fELF", "binary", None, "/bin/x"))
        else:
            got = ansible_private.with_binary(("old", None, b"# stub", "/stub"), b"\x7fELF", "/bin/x")
            self.assertEqual(got, ("binary", None, b"\x7fELF", "/bin/x"))


class EncodeArgs(unittest.TestCase):
    def test_plain_json(self):
        args = {"name": "k3s", "_ansible_check_mode": True, "list": [1, "two"]}
        self.assertEqual(json.loads(ansible_private.encode_args(args)), args)


if __name__ == "__main__":
    unittest.main()
