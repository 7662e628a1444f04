# Unit tests of the platform selection (make test-unit runs them with python3 -m unittest).
from __future__ import annotations

import os
import unittest

from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import (
    COLLECTION_ROOT,
    binary_path,
    platform_of,
)


class PlatformOf(unittest.TestCase):
    def test_known(self):
        for uname, want in {
            "Linux x86_64\n": "linux_amd64",
            "Linux aarch64\n": "linux_arm64",
            "Linux armv7l\n": "linux_arm",
            "Linux armv8l": "linux_arm",
            "Darwin arm64\n": "darwin_arm64",
            "Darwin x86_64\n": "darwin_amd64",
        }.items():
            self.assertEqual(platform_of(uname), want, uname)

    def test_unsupported_is_named(self):
        with self.assertRaises(ValueError) as e:
            platform_of("Linux armv6l\n")
        self.assertIn("Linux on armv6l is not a platform gitops.k3s_flux ships binaries for", str(e.exception))
        self.assertIn("linux_arm64", str(e.exception))
        with self.assertRaises(ValueError) as e:
            platform_of("FreeBSD amd64")
        self.assertIn("FreeBSD on amd64", str(e.exception))

    def test_garbage(self):
        with self.assertRaises(ValueError) as e:
            platform_of("sh: uname: not found\n")
        self.assertIn("could not tell the platform", str(e.exception))


class BinaryPath(unittest.TestCase):
    def test_paths(self):
        self.assertEqual(binary_path("/c", "k3s_node", "linux_amd64"), "/c/plugins/modules/k3s_node")
        self.assertEqual(binary_path("/c", "k3s_node", "linux_arm64"), "/c/plugins/bin/linux_arm64/k3s_node")
        self.assertEqual(binary_path("/c", "flux_operator", "linux_amd64", "controller"), "/c/plugins/bin/linux_amd64/controller")
        self.assertEqual(binary_path("/c", "seed_secret", "darwin_arm64", "controller"), "/c/plugins/bin/darwin_arm64/controller")

    def test_collection_root(self):
        self.assertTrue(os.path.isfile(os.path.join(COLLECTION_ROOT, "galaxy.yml")), COLLECTION_ROOT)


if __name__ == "__main__":
    unittest.main()
