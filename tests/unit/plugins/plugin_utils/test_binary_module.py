# Unit tests of the platform selection and of the binaries kept on a host (make test-unit runs
# them with python3).
from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import shutil
import stat
import subprocess
import tempfile
import types
import unittest
from unittest import mock

from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.binary_module import (
    COLLECTION_ROOT,
    FACT,
    KEEP_FAILED,
    MISSING,
    PLATFORM_MARK,
    ROOT_CACHE,
    USER_CACHE,
    BinaryModuleAction,
    binary_path,
    binary_sha256,
    cached_name,
    collection_info,
    fetch_controller,
    keep_failed,
    payload_url,
    platform_of,
    run_script,
    split_platform,
)

# After the collection's import: importing ansible.plugins first would set up Ansible's
# collection loader, which finds the collection in ansible.cfg's path instead of this tree.
from ansible.errors import AnsibleConnectionFailure, AnsibleError  # noqa: E402
from ansible.plugins.action import ActionBase  # noqa: E402


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
        self.assertEqual(binary_path("/c", "k3s_node", "linux_amd64"), "/c/plugins/bin/linux_amd64/k3s_node")
        self.assertEqual(binary_path("/c", "k3s_node", "linux_arm64"), "/c/plugins/bin/linux_arm64/k3s_node")
        self.assertEqual(binary_path("/c", "flux_operator", "linux_amd64", "controller"), "/c/plugins/bin/linux_amd64/controller")
        self.assertEqual(binary_path("/c", "seed_secret", "darwin_arm64", "controller"), "/c/plugins/bin/darwin_arm64/controller")
        # A node module served by another's binary: that binary, where each platform keeps it.
        self.assertEqual(binary_path("/c", "k3s_registries", "linux_amd64", "k3s_config"), "/c/plugins/bin/linux_amd64/k3s_config")
        self.assertEqual(binary_path("/c", "k3s_registries", "linux_arm", "k3s_config"), "/c/plugins/bin/linux_arm/k3s_config")

    def test_collection_root(self):
        self.assertTrue(os.path.isfile(os.path.join(COLLECTION_ROOT, "galaxy.yml")), COLLECTION_ROOT)


class BinarySHA256(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.root, "plugins", "bin", "linux_arm64"))
        self.path = os.path.join(self.root, "plugins", "bin", "linux_arm64", "k3s_node")
        with open(self.path, "wb") as f:
            f.write(b"\x7fELF binary")
        self.real = hashlib.sha256(b"\x7fELF binary").hexdigest()

    def write_sums(self, text, age=0):
        sums = os.path.join(self.root, "plugins", "bin", "SHA256SUMS")
        with open(sums, "w") as f:
            f.write(text)
        t = os.stat(self.path).st_mtime + age
        os.utime(sums, (t, t))

    def test_from_the_build_sums(self):
        self.write_sums("%s  plugins/bin/linux_arm64/k3s_node\n" % ("a" * 64))
        self.assertEqual(binary_sha256(self.root, self.path), "a" * 64)

    def test_computed_without_sums(self):
        self.assertEqual(binary_sha256(self.root, self.path), self.real)

    def test_computed_when_sums_are_older(self):
        # A binary rebuilt without make build: its old sum would keep the old build on hosts.
        self.write_sums("%s  plugins/bin/linux_arm64/k3s_node\n" % ("a" * 64), age=-10)
        self.assertEqual(binary_sha256(self.root, self.path), self.real)

    def test_from_the_sums_of_an_installed_collection(self):
        # ansible-galaxy extracts the sums before the binaries listed after them in the tarball.
        self.write_sums("%s  plugins/bin/linux_arm64/k3s_node\n" % ("a" * 64), age=-10)
        with open(os.path.join(self.root, "MANIFEST.json"), "w") as f:
            f.write("{}")
        self.assertEqual(binary_sha256(self.root, self.path), "a" * 64)

    def test_computed_when_not_listed(self):
        self.write_sums("%s  plugins/bin/linux_arm/k3s_node\n" % ("a" * 64))
        self.assertEqual(binary_sha256(self.root, self.path), self.real)


@unittest.skipIf(os.getuid() == 0, "as root it would write /var/lib/gitops.k3s_flux; make test-unit runs it as nobody")
class KeptBinary(unittest.TestCase):
    """run_script under a real sh, as a user without root: the user's cache in its HOME (the
    root one is proven by the e2e tests on the test hosts)."""

    def setUp(self):
        self.home = tempfile.mkdtemp()
        self.env = {"HOME": self.home, "PATH": "/usr/bin:/bin"}
        self.dir = os.path.join(self.home, ".cache", "gitops.k3s_flux", "bin")
        # A "binary" that answers with its args from standard input.
        self.upload = os.path.join(tempfile.mkdtemp(), "upload")
        with open(self.upload, "w") as f:
            f.write('#!/bin/sh\nprintf "ran %s with " "$1"; cat\n')
        os.chmod(self.upload, 0o700)

    def sh(self, script):
        return subprocess.run(["/bin/sh", "-c", script], input=b'{"a": 1}', env=self.env, capture_output=True, timeout=30, check=False)

    def test_missing_then_sent_then_kept(self):
        name = cached_name("k3s_node", "0123456789abcdef" * 4)
        self.assertEqual(name, "k3s_node-0123456789abcdef")
        res = self.sh(run_script("k3s_node", name))
        self.assertEqual((res.returncode, res.stdout.decode().strip()), (0, MISSING), res.stderr)

        os.makedirs(self.dir)
        for old in ("k3s_node-00000000000000aa", "k3s_node_info-00000000000000bb"):
            open(os.path.join(self.dir, old), "w").close()
        res = self.sh(run_script("k3s_node", name, self.upload))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.decode(), 'ran - with {"a": 1}')
        # The other build of k3s_node is gone, another module's binary stays, no temp file left.
        self.assertEqual(sorted(os.listdir(self.dir)), ["k3s_node-0123456789abcdef", "k3s_node_info-00000000000000bb"])
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.dir, name)).st_mode), 0o700)

        os.remove(self.upload)
        res = self.sh(run_script("k3s_node", name))
        self.assertEqual(res.stdout.decode(), 'ran - with {"a": 1}', res.stderr)

    def test_failed_copy_leaves_nothing(self):
        name = cached_name("k3s_node", "1" * 64)
        res = self.sh(run_script("k3s_node", name, os.path.join(self.home, "gone")))
        self.assertEqual(res.returncode, 1, res.stdout)
        self.assertEqual(os.listdir(self.dir), [])
        failed = keep_failed({"rc": res.returncode, "stdout": res.stdout.decode()})
        self.assertIn("in %s: cp: " % self.dir, failed["msg"])

    def test_a_cache_it_cannot_make_is_named(self):
        # A home that is no directory: mkdir fails even for root (the Python tests also run as root).
        home = os.path.join(self.home, "file")
        open(home, "w").close()
        self.env["HOME"] = home
        res = self.sh(run_script("k3s_node", cached_name("k3s_node", "1" * 64), self.upload))
        self.assertEqual(res.returncode, 1, res.stdout)
        failed = keep_failed({"rc": res.returncode, "stdout": res.stdout.decode()})
        self.assertTrue(failed["failed"])
        self.assertIn("in %s/.cache/gitops.k3s_flux/bin: mkdir: " % home, failed["msg"])
        self.assertIn("Not a directory", failed["msg"])
        self.assertIsNone(keep_failed({"rc": 1, "stdout": "a module's own failure"}))
        self.assertIsNone(keep_failed({"rc": 0, "stdout": KEEP_FAILED + " not a failure"}))

    def fake_uname(self, answer):
        """A uname on the script's PATH that answers `uname -sm` as a host of that platform."""
        bindir = tempfile.mkdtemp()
        with open(os.path.join(bindir, "uname"), "w") as f:
            f.write("#!/bin/sh\necho '%s'\n" % answer)
        os.chmod(os.path.join(bindir, "uname"), 0o755)
        self.env["PATH"] = bindir + ":/usr/bin:/bin"

    def test_platform_told_in_the_same_command(self):
        names = {"linux_amd64": "k3s_node-00000000000000aa", "linux_arm64": "k3s_node-00000000000000bb"}
        self.fake_uname("Linux aarch64")
        res = self.sh(run_script("k3s_node", None, names=names))
        self.assertEqual(res.stdout.decode(), "%s Linux aarch64\n%s\n" % (PLATFORM_MARK, MISSING), res.stderr)
        os.makedirs(self.dir)
        os.rename(self.upload, os.path.join(self.dir, "k3s_node-00000000000000bb"))
        res = self.sh(run_script("k3s_node", None, names=names))
        self.assertEqual(res.stdout.decode(), '%s Linux aarch64\nran - with {"a": 1}' % PLATFORM_MARK, res.stderr)
        self.assertEqual(split_platform(res.stdout.decode()), ("Linux aarch64", 'ran - with {"a": 1}'))
        # A shell that failed before it asked: its output is the module's failure to report.
        self.assertEqual(split_platform("sh: 1: syntax error\n"), (None, "sh: 1: syntax error\n"))
        # A line a login script printed first is left out.
        self.assertEqual(split_platform("Welcome!\n%s Linux x86_64\n{}" % PLATFORM_MARK), ("Linux x86_64", "{}"))

    def test_platform_without_binary_is_missing(self):
        self.fake_uname("SunOS sparc")
        res = self.sh(run_script("k3s_node", None, names={"linux_amd64": "k3s_node-00000000000000aa"}))
        self.assertEqual(res.stdout.decode(), "%s SunOS sparc\n%s\n" % (PLATFORM_MARK, MISSING), res.stderr)

    def test_quotes_the_upload_path(self):
        self.assertIn("cp '/tmp/a b/x' ", run_script("k3s_node", "k3s_node-1", "/tmp/a b/x"))


@unittest.skipIf(os.getuid() == 0, "as root it would write /var/lib/gitops.k3s_flux; make test-unit runs it as nobody")
class ExecuteKept(unittest.TestCase):
    """A pipelined task on a host whose platform is not known yet: the module's own command asks
    it (no `uname -sm` of its own), under a real sh with a uname that answers as the host would."""

    SUMS = {"linux_amd64": "a" * 64, "linux_arm64": "b" * 64}

    def setUp(self):
        self.home, self.bindir, self.tmpdir = tempfile.mkdtemp(), tempfile.mkdtemp(), tempfile.mkdtemp()
        self.commands = []

    def host(self, uname):
        with open(os.path.join(self.bindir, "uname"), "w") as f:
            f.write("#!/bin/sh\necho '%s'\n" % uname)
        os.chmod(os.path.join(self.bindir, "uname"), 0o755)

    def action(self, delegate_to=None):
        action = BinaryModuleAction.__new__(BinaryModuleAction)
        action._task = types.SimpleNamespace(delegate_to=delegate_to, async_val=0)
        action._platform, action._deferred = None, True
        action._update_module_args = lambda *args: None
        action._compute_environment_string = lambda: ""
        action._connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=self.tmpdir, join_path=os.path.join))
        action._transfer_file = shutil.copy
        action._fixup_perms2 = lambda paths: None
        action._parse_returned_data = lambda res: json.loads(res["stdout"])
        action._sha256 = lambda name, platform: self.SUMS.get(platform)
        action._binary = lambda name: (self.build(action._platform), self.SUMS[action._platform])

        def run(cmd, sudoable=True, in_data=None):
            self.commands.append(cmd)
            env = {"HOME": self.home, "PATH": self.bindir + ":/usr/bin:/bin"}
            res = subprocess.run(cmd, shell=True, input=in_data, env=env, capture_output=True, timeout=30, check=False)
            return {"rc": res.returncode, "stdout": res.stdout.decode(), "stderr": res.stderr.decode()}

        action._low_level_execute_command = run
        return action

    def build(self, platform):
        """The module binary built for platform: it answers with its platform and its args."""
        path = os.path.join(tempfile.mkdtemp(), "k3s_node")
        with open(path, "w") as f:
            f.write('#!/bin/sh\nprintf \'{"built_for": "%s", "args": %%s}\' "$(cat)"\n' % platform)
        os.chmod(path, 0o700)
        return path

    def test_first_task_learns_the_platform_then_sends_its_binary(self):
        self.host("Linux aarch64")
        action = self.action()
        data = action._execute_kept("gitops.k3s_flux.k3s_node", {"a": 1}, {})
        self.assertEqual(data, {"built_for": "linux_arm64", "args": {"a": 1}, "ansible_facts": {FACT: "linux_arm64"}})
        self.assertEqual((2, "linux_arm64"), (len(self.commands), action._platform))
        self.assertIn("uname -sm", self.commands[0])
        self.assertNotIn("uname", self.commands[1])

        # The next play's first task: the binary is kept, one command tells the platform and runs it.
        self.commands = []
        data = self.action()._execute_kept("gitops.k3s_flux.k3s_node", {"a": 2}, {})
        self.assertEqual(data, {"built_for": "linux_arm64", "args": {"a": 2}, "ansible_facts": {FACT: "linux_arm64"}})
        self.assertEqual(1, len(self.commands))

    def test_a_home_it_cannot_write_fails_naming_the_directory(self):
        self.host("Linux x86_64")
        home = os.path.join(self.home, "file")
        open(home, "w").close()
        self.home = home
        data = self.action()._execute_kept("gitops.k3s_flux.k3s_node", {"a": 1}, {})
        self.assertTrue(data["failed"])
        self.assertIn("could not keep the module's binary on the host in %s/.cache/gitops.k3s_flux/bin: mkdir: " % home, data["msg"])

    def test_delegated_caches_nothing(self):
        self.host("Linux x86_64")
        data = self.action(delegate_to="node1")._execute_kept("gitops.k3s_flux.k3s_node", {}, {})
        self.assertEqual(data, {"built_for": "linux_amd64", "args": {}})

    def test_on_the_controller_runs_in_place(self):
        # The local connection, as the user Ansible runs as: the binary where it is, one
        # command, nothing written (the home is not even there).
        self.host("Linux x86_64")
        self.home = os.path.join(self.home, "missing")
        action = self.action()
        action._connection.transport, action._connection.become = "local", None
        action._platform = "linux_amd64"
        data = action._execute_kept("gitops.k3s_flux.k3s_node", {"a": 3}, {})
        self.assertEqual(data, {"built_for": "linux_amd64", "args": {"a": 3}})
        self.assertEqual(1, len(self.commands))
        self.assertIn("exec /", self.commands[0])
        self.assertFalse(os.path.exists(self.home))

        # With become, the other user gets a copy of its own, as on any host.
        self.commands = []
        action = self.action()
        action._connection.transport, action._connection.become = "local", object()
        action._platform = "linux_amd64"
        data = action._execute_kept("gitops.k3s_flux.k3s_node", {"a": 4}, {})
        self.assertEqual(data, {"built_for": "linux_amd64", "args": {"a": 4}})
        self.assertEqual(2, len(self.commands), "missing, then sent")

    def test_unsupported_platform_is_named(self):
        self.host("SunOS sparc")
        data = self.action()._execute_kept("gitops.k3s_flux.k3s_node", {}, {})
        self.assertTrue(data["failed"])
        self.assertIn("SunOS on sparc is not a platform gitops.k3s_flux ships binaries for", data["msg"])
        self.assertEqual(1, len(self.commands))


class PayloadURL(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        with open(os.path.join(self.root, "galaxy.yml"), "w") as f:
            f.write("namespace: gitops\nversion: 1.2.3\nrepository: https://github.com/o/r\ntags:\n  - version: 9\n")

    def test_from_galaxy_yml(self):
        self.assertEqual(collection_info(self.root), ("1.2.3", "https://github.com/o/r"))
        self.assertEqual(payload_url(self.root, "darwin_arm64"),
                         "https://github.com/o/r/releases/download/v1.2.3/gitops-k3s_flux-1.2.3-controller-darwin_arm64.xz")

    def test_installed_manifest_wins(self):
        with open(os.path.join(self.root, "MANIFEST.json"), "w") as f:
            f.write('{"collection_info": {"version": "2.0.0", "repository": "https://example.org/x/"}}')
        self.assertEqual(payload_url(self.root, "linux_arm64"),
                         "https://example.org/x/releases/download/v2.0.0/gitops-k3s_flux-2.0.0-controller-linux_arm64.xz")

    def test_base_given(self):
        self.assertEqual(payload_url(self.root, "linux_amd64", "file:///srv/release/"),
                         "file:///srv/release/gitops-k3s_flux-1.2.3-controller-linux_amd64.xz")


class FetchController(unittest.TestCase):
    binary = b"\x7fELF controller" * 1000

    def setUp(self):
        self.dir = os.path.join(tempfile.mkdtemp(), "cache", "linux_amd64")
        self.sha = hashlib.sha256(self.binary).hexdigest()
        self.dest = os.path.join(self.dir, cached_name("controller", self.sha))
        self.fetched = []

    def opener(self, payload):
        def open_url(url, timeout):
            self.fetched.append(url)
            return io.BytesIO(payload)
        return open_url

    def test_fetched_checked_kept(self):
        os.makedirs(self.dir)
        old = os.path.join(self.dir, "controller-00000000000000aa")
        open(old, "w").close()
        fetch_controller("u", self.sha, self.dest, self.opener(lzma.compress(self.binary)))
        with open(self.dest, "rb") as f:
            self.assertEqual(f.read(), self.binary)
        self.assertEqual(stat.S_IMODE(os.stat(self.dest).st_mode), 0o700)
        base = os.path.basename(self.dest)
        self.assertEqual(sorted(os.listdir(self.dir)), [".lock", base, base + ".checked"], "the older build is gone")
        # Once there, not fetched again.
        fetch_controller("u", self.sha, self.dest, self.opener(b""))
        self.assertEqual(self.fetched, ["u"])

    def test_cached_binary_checked_once_per_run(self):
        fetch_controller("u", self.sha, self.dest, self.opener(lzma.compress(self.binary)))
        # Another run (the marker names another ansible-playbook process): hashed again, and a
        # binary changed in the cache is not run but fetched again.
        with open(self.dest + ".checked", "w") as f:
            f.write("1 0 0 %s\n" % self.sha)
        with open(self.dest, "r+b") as f:
            f.write(b"\x7fELF tampered")
        fetch_controller("u2", self.sha, self.dest, self.opener(lzma.compress(self.binary)))
        self.assertEqual(self.fetched, ["u", "u2"])
        with open(self.dest, "rb") as f:
            self.assertEqual(f.read(), self.binary)
        # In this run, checked already: the marker is trusted, nothing fetched or hashed.
        fetch_controller("u3", self.sha, self.dest, self.opener(b""))
        self.assertEqual(self.fetched, ["u", "u2"])

    def test_cache_directory_of_others_refused(self):
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o777)
        with self.assertRaises(ValueError) as e:
            fetch_controller("u", self.sha, self.dest, self.opener(lzma.compress(self.binary)))
        self.assertIn("is writable by others (mode 777): refused", str(e.exception))
        self.assertEqual(self.fetched, [])

    def test_cache_directory_of_another_user_refused(self):
        from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import binary_module

        os.makedirs(self.dir, mode=0o700)
        with mock.patch.object(binary_module.os, "getuid", return_value=os.getuid() + 1):
            with self.assertRaises(ValueError) as e:
                fetch_controller("u", self.sha, self.dest, self.opener(lzma.compress(self.binary)))
        self.assertIn("belongs to uid %d, not to this user (uid %d): refused" % (os.getuid(), os.getuid() + 1), str(e.exception))
        self.assertEqual(self.fetched, [])

    def assert_refused(self, payload, message):
        with self.assertRaises(ValueError) as e:
            fetch_controller("u", self.sha, self.dest, self.opener(payload))
        self.assertIn(message, str(e.exception))
        self.assertEqual(os.listdir(self.dir), [".lock"], "nothing half-written is left")

    def test_wrong_sha256(self):
        self.assert_refused(lzma.compress(b"another build"), "this collection expects " + self.sha)

    def test_truncated(self):
        payload = lzma.compress(self.binary)
        self.assert_refused(payload[: len(payload) // 2], "the payload ends early")

    def test_not_xz(self):
        self.assert_refused(b"<html>not found</html>", "it is not an xz file")

    def test_too_big(self):
        from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import binary_module

        limit = binary_module.MAX_BINARY_BYTES
        binary_module.MAX_BINARY_BYTES = 4 << 20
        try:
            self.assert_refused(lzma.compress(bytes(5 << 20)), "the payload unpacks to more than 4 MB")
        finally:
            binary_module.MAX_BINARY_BYTES = limit


class TargetPlatform(unittest.TestCase):
    """One `uname -sm` per host and play: the fact a host's task cached is read back, also by a
    task delegated to that host; a delegated task caches nothing on the host it runs for."""

    def action(self, delegate_to=None, uname="Linux aarch64", pipelining=False):
        action = BinaryModuleAction.__new__(BinaryModuleAction)
        action._task = types.SimpleNamespace(delegate_to=delegate_to, async_val=0)
        action._connection = types.SimpleNamespace(transport="ssh")
        action._is_pipelining_enabled = lambda style, wrap_async=False: pipelining
        action._deferred = False
        action.asked = 0

        def run(cmd, sudoable=True):
            action.asked += 1
            return {"rc": 0, "stdout": uname + "\n"}

        action._low_level_execute_command = run
        return action

    def test_cached_fact(self):
        action, result = self.action(), {}
        self.assertEqual("linux_arm", action._target_platform({"ansible_facts": {FACT: "linux_arm"}}, result))
        self.assertEqual(0, action.asked)

    def test_asked_and_cached(self):
        action, result = self.action(), {}
        self.assertEqual("linux_arm64", action._target_platform({}, result))
        self.assertEqual((1, {FACT: "linux_arm64"}), (action.asked, result["ansible_facts"]))

    def test_pipelined_asks_in_the_module_command(self):
        action, result = self.action(pipelining=True), {}
        self.assertIsNone(action._target_platform({}, result))
        self.assertEqual((0, True, {}), (action.asked, action._deferred, result))

    def test_delegated_reads_the_delegated_host_fact(self):
        action, result = self.action(delegate_to="node1"), {}
        task_vars = {"ansible_facts": {FACT: "linux_amd64"}, "ansible_delegated_vars": {"node1": {"ansible_facts": {FACT: "linux_arm"}}}}
        self.assertEqual("linux_arm", action._target_platform(task_vars, result))
        self.assertEqual((0, {}), (action.asked, result))

    def test_delegated_without_fact_asks_and_caches_nothing(self):
        action, result = self.action(delegate_to="node1"), {}
        task_vars = {"ansible_facts": {FACT: "linux_amd64"}, "ansible_delegated_vars": {"node1": {}}}
        self.assertEqual("linux_arm64", action._target_platform(task_vars, result))
        self.assertEqual((1, {}), (action.asked, result))


class Cleanup(unittest.TestCase):
    """A host lost while its task ran: removing the task's temporary directory fails too, and
    that failure must not replace the task's (Ansible would report the host FAILED, not
    UNREACHABLE)."""

    def action(self):
        action = BinaryModuleAction.__new__(BinaryModuleAction)
        action._task = types.SimpleNamespace(get_name=lambda: "Render the k3s config")
        return action

    def test_connection_failure_is_a_warning(self):
        with mock.patch.object(ActionBase, "cleanup", side_effect=AnsibleConnectionFailure("Failed to connect to the host via ssh: ")):
            self.action().cleanup()

    def test_other_failures_stay(self):
        with mock.patch.object(ActionBase, "cleanup", side_effect=AnsibleError("rm: permission denied")):
            with self.assertRaises(AnsibleError):
                self.action().cleanup()


class CacheRemovedByReset(unittest.TestCase):
    # Role k8s_cluster's uninstall.yml removes the binaries kept on a host with a shell command of
    # its own: it must name the very directories run_script keeps them in.
    def test_uninstall_names_the_cache_directories(self):
        with open(os.path.join(COLLECTION_ROOT, "roles", "k8s_cluster", "tasks", "uninstall.yml")) as f:
            tasks = f.read()
        self.assertIn("d=%s;" % ROOT_CACHE, tasks)
        self.assertIn("d=%s;" % USER_CACHE, tasks)
        script = run_script("k3s_node", "k3s_node-0123456789abcdef")
        self.assertIn("d=%s;" % ROOT_CACHE, script)
        self.assertIn("d=%s;" % USER_CACHE, script)


if __name__ == "__main__":
    unittest.main()
