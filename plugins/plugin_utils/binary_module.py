# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs a Go binary module built for the target's OS and CPU (on the controller only).

Each module is a Python file in plugins/modules, generated from its Go spec: its docs and argument
spec, for ansible-doc, ansible-test and ansible-lint; it is never run. The action plugins of the modules derive from BinaryModuleAction, which
asks each host `uname -sm` once (cached for the play as the fact gitops_k3s_flux_platform; with
pipelining, in the host's first module command) and sends the binary that serves the module
(plugin_utils/registry.py), built for that platform: plugins/bin/<os>_<arch>/<binary>, for a
controller-side module the one binary that serves them all, plugins/bin/<os>_<arch>/controller.
A platform with no binary fails naming it.

A release's collection tarball carries the node binaries but not the controller binary (Galaxy
takes 20 MB; four platforms of it weigh about 45 MB compressed): the first task that needs the
controller binary for a platform fetches gitops-k3s_flux-<version>-controller-<platform>.xz from
the release (the variable
gitops_k3s_flux_release_url or the environment's GITOPS_K3S_FLUX_RELEASE_URL, a URL or file://
directory; else the GitHub release of this version), unpacks it into the controller's
~/.cache/gitops.k3s_flux/controller/<platform>, and keeps it only if its sha256 is the one
plugins/bin/SHA256SUMS gives. A cached binary's sha256 is checked again once per play run (one
that changed is fetched again), and a cache directory another user owns or others may write to
is refused.

With pipelining on (ansible.cfg `pipelining = True`, as for Python modules) a task is one command
on the host: the binary is kept there under a name that holds its sha256 (in
/var/lib/gitops.k3s_flux/bin when it runs as root, else in the user's ~/.cache/gitops.k3s_flux/bin),
sent only when that name is missing, and given its args on standard input. Without pipelining,
Ansible's own way: binary and args file copied into a temporary directory for every task.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import stat
import tempfile

# Before Ansible's imports: its collection loader, which they set up, would not find this one
# where the unit tests import the collection from a plain path.
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils.registry import BINARY, CONTROLLER
from ansible_collections.gitops.k3s_flux.plugins.plugin_utils import ansible_private
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

FACT = "gitops_k3s_flux_platform"

# uname -s, uname -m -> the Go GOOS_GOARCH a binary is built for.
PLATFORMS = {
    ("Linux", "x86_64"): "linux_amd64",
    ("Linux", "amd64"): "linux_amd64",
    ("Linux", "aarch64"): "linux_arm64",
    ("Linux", "arm64"): "linux_arm64",
    ("Linux", "armv7l"): "linux_arm",
    ("Linux", "armv8l"): "linux_arm",  # a 32-bit userland on a 64-bit CPU
    ("Darwin", "x86_64"): "darwin_amd64",
    ("Darwin", "arm64"): "darwin_arm64",
}

# Where a host keeps the binaries: root's is root's alone; any other user's is in their home.
ROOT_CACHE = "/var/lib/gitops.k3s_flux/bin"
USER_CACHE = '"${XDG_CACHE_HOME:-$HOME/.cache}/gitops.k3s_flux/bin"'
# What the host answers when the binary is not there yet.
MISSING = "GITOPS_K3S_FLUX_BINARY_MISSING"
# What the host answers, with the directory and the error, when it could not keep the binary sent.
KEEP_FAILED = "GITOPS_K3S_FLUX_KEEP_FAILED"
# What the host answers first, with its `uname -sm`, when the task's command asked it.
PLATFORM_MARK = "GITOPS_K3S_FLUX_PLATFORM"
# The build's sums of every binary (make build), so a task need not hash 50 MB.
SUMS = os.path.join("plugins", "bin", "SHA256SUMS")

# Where a release is fetched from, unless the variable or the environment says.
RELEASE_URL_VAR = "gitops_k3s_flux_release_url"
RELEASE_URL_ENV = "GITOPS_K3S_FLUX_RELEASE_URL"
# The most a payload may unpack to: a bad release must not fill the controller's disk.
MAX_BINARY_BYTES = 256 << 20

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def platform_of(uname):
    """The platform (linux_arm64, ...) of `uname -sm` output; ValueError naming an unknown one."""
    fields = uname.split()
    if len(fields) != 2:
        raise ValueError("could not tell the platform from `uname -sm`: %r" % uname.strip())
    platform = PLATFORMS.get((fields[0], fields[1]))
    if platform is None:
        raise ValueError(
            "%s on %s is not a platform gitops.k3s_flux ships binaries for (%s)"
            % (fields[0], fields[1], ", ".join(sorted(set(PLATFORMS.values()))))
        )
    return platform


# The controller binary's environment: client-go's and Helm's package initialisation allocates enough for three
# garbage collections before main runs, a quarter of the binary's start. A module lives seconds
# to minutes, so the collector waits until the heap reaches 128 MiB (measured: 31 ms to 23 ms).
CONTROLLER_ENV = "GOGC=off GOMEMLIMIT=128MiB"


def binary_path(root, name, platform, multicall=None):
    """Where the binary of module name for platform is in the collection at root; multicall names
    the binary that serves it when that is not its own (the controller binary, or a node binary
    that serves several modules: k3s_config serves k3s_registries)."""
    return os.path.join(root, "plugins", "bin", platform, multicall or name)


def expected_sha256(root, rel):
    """The sha256 the build's SHA256SUMS gives the file at rel (relative to root), or None."""
    try:
        with open(os.path.join(root, SUMS)) as f:
            for line in f:
                fields = line.split()
                if len(fields) == 2 and fields[1] == rel:
                    return fields[0]
    except OSError:
        pass
    return None


def collection_info(root):
    """(version, repository) of the collection at root: its MANIFEST.json once installed, else
    galaxy.yml."""
    try:
        with open(os.path.join(root, "MANIFEST.json")) as f:
            info = json.load(f)["collection_info"]
        return info["version"], info.get("repository") or ""
    except (OSError, ValueError, KeyError):
        pass
    fields = {}
    with open(os.path.join(root, "galaxy.yml")) as f:
        for line in f:
            key, sep, value = line.partition(":")
            if sep and not line[0].isspace():
                fields[key.strip()] = value.strip()
    return fields.get("version", ""), fields.get("repository", "")


def payload_name(version, platform):
    """The release file that holds the controller binary for platform, xz-compressed."""
    return "gitops-k3s_flux-%s-controller-%s.xz" % (version, platform)


def payload_url(root, platform, base=None):
    """Where the controller binary for platform is fetched from: base (a URL or file://
    directory) or the GitHub release of the collection at root."""
    version, repository = collection_info(root)
    if not base:
        base = "%s/releases/download/v%s/" % (repository.rstrip("/"), version)
    return base.rstrip("/") + "/" + payload_name(version, platform)


def user_cache_dir():
    """The controller user's cache of fetched controller binaries."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gitops.k3s_flux", "controller")


def fetch_controller(url, sha256, dest, opener=open_url):
    """Puts the controller binary at dest (its name holds sha256) from the xz payload at url,
    unless it is there: unpacked into a temporary file beside it, kept only when its sha256 is
    sha256, then renamed; a lock keeps parallel tasks from fetching it twice. Other builds in
    dest's directory are removed. ValueError or OSError (the URL's) say why it failed."""
    try:
        import lzma  # here: only a release's first task needs it
    except ImportError as e:
        raise ValueError("this Python cannot unpack it: %s (a Python built without liblzma)" % e)

    directory = os.path.dirname(dest)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    check_private(directory)
    if cached_binary_ok(dest, sha256):
        return
    with open(os.path.join(directory, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached_binary_ok(dest, sha256):
            return
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".fetch-")
        try:
            digest, size = hashlib.sha256(), 0
            unpack = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
            with os.fdopen(fd, "wb") as out:
                response = opener(url, timeout=60)
                try:
                    while not unpack.eof:
                        chunk = b""
                        # pylint takes the C type's property for a method, always true.
                        if unpack.needs_input:  # pylint: disable=using-constant-test
                            chunk = response.read(1 << 20)
                            if not chunk:
                                raise ValueError("the payload ends early")
                        try:
                            data = unpack.decompress(chunk, max_length=1 << 20)
                        except lzma.LZMAError as e:
                            raise ValueError("it is not an xz file: %s" % e)
                        size += len(data)
                        if size > MAX_BINARY_BYTES:
                            raise ValueError("the payload unpacks to more than %d MB" % (MAX_BINARY_BYTES >> 20))
                        digest.update(data)
                        out.write(data)
                finally:
                    response.close()
            if digest.hexdigest() != sha256:
                raise ValueError("it unpacks to a binary whose sha256 is %s; this collection expects %s" % (digest.hexdigest(), sha256))
            os.chmod(tmp, 0o700)
            os.rename(tmp, dest)
            mark_checked(dest, sha256)
        except BaseException:
            os.unlink(tmp)
            raise
        base = os.path.basename(dest)
        for name in os.listdir(directory):
            if name.startswith("controller-") and name not in (base, base + ".checked"):
                os.unlink(os.path.join(directory, name))


def check_private(directory):
    """Refuses a cache directory another user owns or others may write to: a binary there
    could have been put by someone else, and it runs as this user."""
    st = os.stat(directory)
    if st.st_uid != os.getuid():
        raise ValueError("the cache directory %s belongs to uid %d, not to this user (uid %d): refused; remove it" % (directory, st.st_uid, os.getuid()))
    if st.st_mode & 0o022:
        raise ValueError("the cache directory %s is writable by others (mode %o): refused; chmod 700 it" % (directory, stat.S_IMODE(st.st_mode)))


def cached_binary_ok(dest, sha256):
    """Whether the cached binary at dest is there and has sha256. Hashed once per play run:
    a marker beside it records the run (the ansible-playbook process, this worker's parent),
    its size and mtime; a binary that does not match is removed, to be fetched again."""
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        return False
    seen = "%d %d %d %s\n" % (os.getppid(), st.st_size, st.st_mtime_ns, sha256)
    try:
        with open(dest + ".checked") as f:
            if f.read() == seen:
                return True
    except OSError:
        pass
    h = hashlib.sha256()
    with open(dest, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != sha256:
        os.unlink(dest)
        return False
    mark_checked(dest, sha256)
    return True


def mark_checked(dest, sha256):
    """Records that the binary at dest was found to have sha256 in this play run."""
    st = os.stat(dest)
    with open(dest + ".checked", "w") as f:
        f.write("%d %d %d %s\n" % (os.getppid(), st.st_size, st.st_mtime_ns, sha256))


def binary_sha256(root, path):
    """The sha256 of the binary at path: from the build's SHA256SUMS in an installed collection
    (its MANIFEST.json: ansible-galaxy checked every file, and its extraction leaves the sums
    older than the binaries that follow them in the tarball) or, in a checkout, when the sums are
    not older than the binary; else computed (40 ms for the controller binary, on every task)."""
    try:
        fresh = os.path.isfile(os.path.join(root, "MANIFEST.json")) or os.stat(os.path.join(root, SUMS)).st_mtime >= os.stat(path).st_mtime
    except OSError:
        fresh = False
    sha256 = expected_sha256(root, os.path.relpath(path, root)) if fresh else None
    if sha256:
        return sha256
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached_name(binary, sha256):
    """The name a binary is kept under on a host: another build is another name."""
    return "%s-%s" % (binary, sha256[:16])


def run_script(binary, name, upload=None, names=None):
    """The shell that runs the kept binary name with its args on standard input. Without upload
    it answers MISSING when the binary is not there; with upload (the path the binary was just
    sent to) it first puts it in place, atomically, and removes the other builds of binary.

    names ({platform: kept name}, name None) is for a host whose platform is not known yet: the
    script first answers PLATFORM_MARK and its `uname -sm`, then runs the name kept for that
    platform (MISSING for a platform not in names), so that asking costs no command of its own."""
    lines = []
    if names is not None:
        lines += ['u="$(uname -sm)"', 'echo "%s $u"' % PLATFORM_MARK, 'case "$u" in']
        for platform, kept in sorted(names.items()):
            unames = sorted("%s %s" % key for key, value in PLATFORMS.items() if value == platform)
            lines.append("  %s) n=%s ;;" % ("|".join('"%s"' % u for u in unames), kept))
        lines += ["  *) echo %s; exit 0 ;;" % MISSING, "esac"]
        name = "$n"
    lines += [
        'if [ "$(id -u)" = 0 ]; then d=%s; else d=%s; fi' % (ROOT_CACHE, USER_CACHE),
        'b="$d/%s"' % name,
    ]
    if upload is None:
        lines.append('[ -x "$b" ] || { echo %s; exit 0; }' % MISSING)
    else:
        lines += [
            "umask 077",
            't="$d/.%s.$$"' % name,
            'e="$( { mkdir -p "$d" && cp %s "$t" && chmod 0700 "$t" && mv -f "$t" "$b"; } 2>&1)" || { rm -f "$t"; echo "%s $d: $e"; exit 1; }'
            % (shlex.quote(upload), KEEP_FAILED),
            'for f in "$d"/%s-*; do [ "$f" = "$b" ] || rm -f "$f"; done' % binary,
        ]
    lines.append('exec "$b" -')
    return "\n".join(lines)


def keep_failed(res):
    """The task's failure when the host could not keep the binary it was sent (a home the user
    cannot write, a full disk): naming the directory and the host's error, not Ansible's
    "Module result deserialization failed"; None otherwise."""
    if res.get("rc") == 0:
        return None
    for line in res.get("stdout", "").split("\n"):
        if line.startswith(KEEP_FAILED + " "):
            where = line[len(KEEP_FAILED) + 1:].strip()
            return {"failed": True, "rc": res.get("rc"), "msg": (
                "gitops.k3s_flux could not keep the module's binary on the host in %s. A user other than root keeps the binaries "
                "in $XDG_CACHE_HOME or ~/.cache, which it must be able to write; with become, root keeps them in %s" % (where, ROOT_CACHE))}
    return None


def split_platform(stdout):
    """(uname, what followed it) of the output of a run_script given names, past any line a
    login script printed first; (None, stdout) without PLATFORM_MARK (the shell failed before)."""
    lines = stdout.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(PLATFORM_MARK + " "):
            return line[len(PLATFORM_MARK) + 1:].strip(), "\n".join(lines[i + 1:])
    return None, stdout


class BinaryModuleAction(ActionBase):
    """Runs this action's module as the binary built for the target's platform."""

    def run(self, tmp=None, task_vars=None):
        result = self._begin(tmp, task_vars)
        if result.get("failed"):
            return result
        result.update(self._execute_module(module_name=self._task.action, module_args=self._task.args, task_vars=task_vars))
        return result

    def cleanup(self, force=False):
        """ActionBase's clean-up, unless the host has gone away: its temporary directory cannot
        be removed then, and Ansible would report the failure to remove it (the task FAILED)
        instead of the task's own (the host UNREACHABLE)."""
        try:
            super().cleanup(force)
        except AnsibleConnectionFailure as e:
            display.warning("%s: temporary directory not removed: %s" % (self._task.get_name(), e))

    def _begin(self, tmp, task_vars):
        """ActionBase's start of a run, then the host's platform: the result so far (failed
        when the platform is unknown)."""
        result = super().run(tmp, task_vars)
        self._deferred = False
        self._platform = self._target_platform(task_vars or {}, result)
        self._task_vars = task_vars or {}
        return result

    def _target_platform(self, task_vars, result):
        """The host's platform: the cached fact, else one `uname -sm` (the controller's own for
        the local connection), returned as a fact. A pipelined task asks in its module's command
        instead (_execute_kept): None then, with _deferred set.

        A delegated task runs on another host than the one whose facts it would set: it reads the
        fact the delegated host cached (its vars are in ansible_delegated_vars), else asks, and
        caches nothing."""
        facts_of = task_vars
        if self._task.delegate_to:
            facts_of = (task_vars.get("ansible_delegated_vars") or {}).get(self._task.delegate_to) or {}
        cached = (facts_of.get("ansible_facts") or {}).get(FACT) or facts_of.get(FACT)
        if cached:
            return cached
        if getattr(self._connection, "transport", None) == "local":
            # The task runs here, on the controller, where this plugin runs: no command needed.
            here = os.uname()
            uname = "%s %s" % (here.sysname, here.machine)
        elif self._pipelined():
            self._deferred = True
            return None
        else:
            res = self._low_level_execute_command("uname -sm", sudoable=False)
            if res.get("rc") != 0:
                result.update(failed=True, msg="uname -sm failed on the host (rc %s): %s" % (res.get("rc"), (res.get("stderr") or "").strip()))
                return None
            uname = res.get("stdout", "")
        return self._learn_platform(uname, result)

    def _learn_platform(self, uname, result):
        """The platform of uname, returned in result as a fact unless the task is delegated; None
        with result failed for one this collection has no binaries for."""
        try:
            platform = platform_of(uname)
        except ValueError as e:
            result.update(failed=True, msg=str(e))
            return None
        if not self._task.delegate_to:
            result.setdefault("ansible_facts", {})[FACT] = platform
        return platform

    def _pipelined(self, wrap_async=False):
        """Whether the module runs as one pipelined command (_execute_kept)."""
        return not (wrap_async or self._task.async_val) and ansible_private.pipelining_enabled(self)

    def _execute_module(self, module_name=None, module_args=None, tmp=None, task_vars=None, persist_files=False, delete_remote_tmp=None,
                        wrap_async=False, **kwargs):
        known = getattr(self, "_platform", None) or getattr(self, "_deferred", False)
        if not known or not self._pipelined(wrap_async):
            return super()._execute_module(module_name=module_name, module_args=module_args, tmp=tmp, task_vars=task_vars,
                                           persist_files=persist_files, delete_remote_tmp=delete_remote_tmp, wrap_async=wrap_async, **kwargs)
        return self._execute_kept(module_name or self._task.action, dict(self._task.args if module_args is None else module_args), task_vars or {})

    def _execute_kept(self, module_name, module_args, task_vars):
        """Runs the binary kept on the host with the args on standard input: one command (on
        the host's first task of the play, the same command first tells its platform), and a
        second that first sends the binary when the host has not got this build."""
        name = module_name.split(".")[-1]
        binary = self._multicall(name) or name
        ansible_private.update_module_args(self, module_name, module_args, task_vars)
        in_data = ansible_private.encode_args(module_args)
        env = ansible_private.environment_string(self)
        if binary == CONTROLLER:
            env = (env + " " + CONTROLLER_ENV).strip()

        def run(script):
            cmd = "/bin/sh -c %s" % shlex.quote(script)
            return self._low_level_execute_command((env + " " + cmd).strip(), sudoable=True, in_data=in_data)

        if self._platform is not None and self._runs_here():
            # The binary is on this machine already (in the collection, or in the controller's
            # cache): run it where it is. Keeping a copy would write into the user's home, which
            # an execution environment's random user may not be able to.
            return ansible_private.parse_result(self, run("exec %s -" % shlex.quote(self._binary(name)[0])))
        res, facts = None, None
        if self._platform is None:
            # The host's first task of the play: it tells its platform in the same command.
            names = {}
            for platform in set(PLATFORMS.values()):
                sha256 = self._sha256(name, platform)
                if sha256:
                    names[platform] = cached_name(binary, sha256)
            res = run(run_script(binary, None, names=names))
            uname, res["stdout"] = split_platform(res.get("stdout", ""))
            if uname is not None:
                learned = {}
                self._platform = self._learn_platform(uname, learned)
                if self._platform is None:
                    return learned
                facts = learned.get("ansible_facts")
        if self._platform is not None:
            if res is None:
                res = run(run_script(binary, cached_name(binary, self._binary(name)[1])))
            if res.get("rc") == 0 and res.get("stdout", "").strip() == MISSING:
                path, sha256 = self._binary(name)
                kept = cached_name(binary, sha256)
                tmpdir = ansible_private.shell_tmpdir(self) or self._make_tmp_path()
                upload = ansible_private.join_remote(self, tmpdir, kept)
                self._transfer_file(path, upload)
                self._fixup_perms2([tmpdir, upload])
                res = run(run_script(binary, kept, upload))
                failed = keep_failed(res)
                if failed:
                    return failed
        data = ansible_private.parse_result(self, res)
        if facts:
            data.setdefault("ansible_facts", {}).update(facts)
        return data

    def _runs_here(self):
        """Whether the task runs on the controller, as the user Ansible runs as (the local
        connection without become): the binary need not travel, nor be kept."""
        return getattr(self._connection, "transport", None) == "local" and getattr(self._connection, "become", None) is None

    def _multicall(self, name):
        """The binary that serves module name when it is not its own (internal/registry's table,
        plugin_utils/registry.py), else None."""
        binary = BINARY.get(name)
        return binary if binary != name else None

    def _binary(self, name):
        """(path, sha256) of module name's binary for the host's platform: in the collection, or
        for the controller binary of a release, fetched into the controller's cache; fails
        naming a missing one."""
        path = binary_path(COLLECTION_ROOT, name, self._platform, self._multicall(name))
        sha256 = self._sha256(name, self._platform)
        if os.path.isfile(path):
            return path, sha256
        if not sha256:
            raise AnsibleActionFail("module %s has no binary for %s in this collection (%s)" % (name, self._platform, path))
        # Templated here, for a controller binary the collection does not carry, not for every task.
        base = self._templar.template(getattr(self, "_task_vars", {}).get(RELEASE_URL_VAR)) or os.environ.get(RELEASE_URL_ENV)
        url = payload_url(COLLECTION_ROOT, self._platform, base)
        dest = os.path.join(user_cache_dir(), self._platform, cached_name(self._multicall(name), sha256))
        try:
            fetch_controller(url, sha256, dest)
        except (OSError, ValueError) as e:
            raise AnsibleActionFail(
                "module %s: could not fetch the controller binary for %s from %s: %s. Set %s (or the environment's %s) to where "
                "this release's files are (a URL or a file:// directory)" % (name, self._platform, url, e, RELEASE_URL_VAR, RELEASE_URL_ENV))
        return dest, sha256

    def _sha256(self, name, platform):
        """The sha256 of module name's binary for platform, without fetching a controller binary
        (SHA256SUMS gives it); None when this collection has no such binary."""
        path = binary_path(COLLECTION_ROOT, name, platform, self._multicall(name))
        if os.path.isfile(path):
            return binary_sha256(COLLECTION_ROOT, path)
        if self._multicall(name) == CONTROLLER:
            return expected_sha256(COLLECTION_ROOT, os.path.relpath(path, COLLECTION_ROOT))
        return None

    def _configure_module(self, module_name, module_args, task_vars):
        configured = super()._configure_module(module_name, module_args, task_vars)
        platform = getattr(self, "_platform", None)
        if not platform:
            return configured
        with open(self._binary(module_name.split(".")[-1])[0], "rb") as f:
            data = f.read()
        # The binary, not plugins/modules' stub.
        return ansible_private.with_binary(configured, data, f.name)
