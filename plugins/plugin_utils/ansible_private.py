# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's private API: the one place the collection's action plugins touch it.

BinaryModuleAction runs a Go binary where Ansible would run a Python module. The helpers every
action plugin uses (ActionBase._execute_module, _low_level_execute_command, _transfer_file,
_make_tmp_path, _fixup_perms2, _remove_tmp_path, _find_needle) are called on the action as
usual; what else it relies on is here, each use with the ansible-core versions it was checked on:
2.14 (Debian bookworm's package) and 2.19 (PyPI, hack/requirements-dev.txt), the two the tests run it on.
The version is read from ansible.release.
"""

from __future__ import annotations

import dataclasses
import json
import re

from ansible.release import __version__ as ANSIBLE_CORE_VERSION


def core_version(text):
    """(major, minor) of an ansible-core version such as 2.19.4 or 2.14.18."""
    match = re.match(r"(\d+)\.(\d+)", text)
    if not match:
        raise ValueError("not an ansible-core version: %r" % text)
    return int(match.group(1)), int(match.group(2))


CORE = core_version(ANSIBLE_CORE_VERSION)

# 2.19: a binary module's args and results go through a serialization profile, "legacy" for
# modules that are not Python (ansible.module_utils.common.json). 2.14: plain JSON.
if CORE >= (2, 19):
    from ansible.module_utils.common.json import Direction, get_module_encoder

    PROFILE = "legacy"
else:
    PROFILE = None


def encode_args(module_args):
    """The args as Ansible sends a binary module its args file (2.14: json.dumps; 2.19: the
    legacy profile's encoder, which also turns its tagged strings into plain ones)."""
    if PROFILE:
        return json.dumps(module_args, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)).encode()
    return json.dumps(module_args).encode()


def parse_result(action, res):
    """ActionBase._parse_returned_data on a command's result: 2.19 takes the profile the module
    answered in, 2.14 has no such argument. Ansible's internal keys are taken out, as
    _execute_module does (ansible.vars.clean.remove_internal_keys, 2.14 and 2.19)."""
    # Imported here: ansible.vars sets up Ansible's collection loader, which would not find the
    # collection's other modules where the unit tests import it from a plain path.
    from ansible.vars.clean import remove_internal_keys

    data = action._parse_returned_data(res, PROFILE) if PROFILE else action._parse_returned_data(res)
    data.pop("_ansible_suppress_tmpdir_delete", None)
    remove_internal_keys(data)
    return data


def update_module_args(action, module_name, module_args, task_vars):
    """ActionBase._update_module_args: adds the _ansible_* keys (check mode, diff, no_log,
    verbosity...) that _execute_module would (2.14 and 2.19: same signature)."""
    action._update_module_args(module_name, module_args, task_vars)


def environment_string(action):
    """ActionBase._compute_environment_string: the task's environment as a shell prefix
    (2.14 and 2.19)."""
    return action._compute_environment_string()


def pipelining_enabled(action):
    """ActionBase._is_pipelining_enabled for a module that is not Python ("new" style asks the
    connection and the become plugin, 2.14 and 2.19)."""
    return action._is_pipelining_enabled("new")


def shell_tmpdir(action):
    """The task's remote temporary directory, if one was made (the connection's shell plugin's
    tmpdir attribute, 2.14 and 2.19)."""
    return action._connection._shell.tmpdir


def join_remote(action, *parts):
    """A path on the host, joined by the connection's shell plugin (2.14 and 2.19)."""
    return action._connection._shell.join_path(*parts)


def censor_connection(action):
    """Sets no_log on the connection's own copy of the play context, so that -vvv does not log
    what the host returns (the connection plugins read _play_context.no_log, 2.14 and 2.19)."""
    action._connection._play_context.no_log = True


def with_binary(configured, data, path):
    """ActionBase._configure_module's result with the binary's bytes as the module and its style
    "binary": 2.14 returns (style, shebang, data, path); 2.19 returns (_BuiltModule, path), a
    dataclass with module_style, shebang and b_module_data."""
    if CORE >= (2, 19):
        return dataclasses.replace(configured[0], b_module_data=data, module_style="binary", shebang=None), path
    return "binary", None, data, path
