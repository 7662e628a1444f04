# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs a Go binary module built for the target's OS and CPU (on the controller only).

Ansible would copy plugins/modules/<name> (built for linux/amd64) to every host. The action
plugins of the modules derive from BinaryModuleAction instead, which asks each host `uname -sm`
once (cached for the play as the fact gitops_k3s_flux_platform) and sends the binary built for
that platform: plugins/bin/<os>_<arch>/<name> for a node module, or for a controller-side module
the one binary that serves them all, plugins/bin/<os>_<arch>/controller. A platform with no
binary fails naming it.
"""

from __future__ import annotations

import dataclasses
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

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


def binary_path(root, name, platform, multicall=None):
    """Where the binary of module name for platform is in the collection at root; multicall names
    the binary that serves several modules (the controller-side ones)."""
    if multicall:
        return os.path.join(root, "plugins", "bin", platform, multicall)
    if platform == "linux_amd64":
        return os.path.join(root, "plugins", "modules", name)
    return os.path.join(root, "plugins", "bin", platform, name)


class BinaryModuleAction(ActionBase):
    """Runs this action's module as the binary built for the target's platform."""

    # The multi-call binary that serves this module, or None for a binary of its own.
    MULTICALL = None

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        self._platform = self._target_platform(task_vars or {}, result)
        if result.get("failed"):
            return result
        result.update(self._execute_module(module_name=self._task.action, module_args=self._task.args, task_vars=task_vars))
        return result

    def _target_platform(self, task_vars, result):
        """The host's platform: the cached fact, else one `uname -sm`, returned as a fact.

        A delegated task (delegate_to: localhost) runs on another host than the one whose facts
        it would read and set, so it asks every time and caches nothing."""
        delegated = bool(self._task.delegate_to)
        cached = None if delegated else (task_vars.get("ansible_facts") or {}).get(FACT) or task_vars.get(FACT)
        if cached:
            return cached
        res = self._low_level_execute_command("uname -sm", sudoable=False)
        if res.get("rc") != 0:
            result.update(failed=True, msg="uname -sm failed on the host (rc %s): %s" % (res.get("rc"), (res.get("stderr") or "").strip()))
            return None
        try:
            platform = platform_of(res.get("stdout", ""))
        except ValueError as e:
            result.update(failed=True, msg=str(e))
            return None
        if not delegated:
            result.setdefault("ansible_facts", {})[FACT] = platform
        return platform

    def _configure_module(self, module_name, module_args, task_vars):
        configured = super()._configure_module(module_name, module_args, task_vars)
        platform = getattr(self, "_platform", None)
        if not platform:
            return configured
        name = module_name.split(".")[-1]
        path = binary_path(COLLECTION_ROOT, name, platform, self.MULTICALL)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise AnsibleActionFail("module %s has no binary for %s in this collection (%s): %s" % (name, platform, path, e.strerror))
        if len(configured) == 4:  # ansible-core < 2.19: (style, shebang, data, path)
            style, shebang, _, _ = configured
            return style, shebang, data, path
        built, _ = configured  # ansible-core 2.19: (_BuiltModule, path)
        return dataclasses.replace(built, b_module_data=data), path
