# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup gitops.k3s_flux.repo_dir: your repository's directories, for the roles' path defaults."""

from __future__ import annotations

DOCUMENTATION = r"""
name: repo_dir
author: gitops.k3s_flux maintainers (@gitops-k3s-flux)
version_added: "0.1.0"
short_description: Your repository's top directory, or its Ansible directory
description:
  - Finds the repository the play works on, so the roles' path defaults (C(flux/cluster.yaml), the
    fetched kubeconfig) land in your repository in either layout, and never inside the installed
    collection.
  - Looks from each inventory source's directory, then the playbook's directory, then the current
    directory, skipping any inside an installed collection (a path with C(ansible_collections)).
    From the first of those, the nearest directory above it with C(.git) (the git top level), else
    the nearest with C(flux/cluster.yaml), is the repository; the first start that finds one wins.
    When none does, the playbook directory's parent (the layout C(playbooks/) beside C(flux/)),
    or, for a playbook inside a collection, the first start directory.
  - With the term C(ansible), returns the repository's Ansible directory instead - C(<repository>/ansible)
    when that directory exists (plays in C(ansible/) beside C(flux/)), else the repository itself.
options:
  _terms:
    description: Empty for the repository's top directory, C(ansible) for its Ansible directory.
    required: false
"""

EXAMPLES = r"""
- name: Where the kubeconfig goes
  ansible.builtin.debug:
    msg: "{{ lookup('gitops.k3s_flux.repo_dir', 'ansible') }}/.generated/kubeconfig"
"""

RETURN = r"""
_raw:
  description: One absolute directory.
  type: list
  elements: path
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def in_collection(path):
    return "ansible_collections" in path.split(os.sep)


def starts_of(inventory_sources, playbook_dir, cwd):
    """The directories the search starts from, in order, without those inside a collection, and
    the fallback when no start finds a repository."""
    starts = []
    for source in inventory_sources or []:
        if not isinstance(source, str) or "," in source:  # a host list, not a path
            continue
        source = os.path.abspath(os.path.expanduser(source))
        starts.append(source if os.path.isdir(source) else os.path.dirname(source))
    starts += [playbook_dir, cwd]
    starts = [s for s in starts if s and not in_collection(s)]
    if playbook_dir and not in_collection(playbook_dir):
        return starts, os.path.dirname(playbook_dir)
    return starts, (starts[0] if starts else None)


def nearest(start, marker):
    """The nearest directory at or above start that holds marker, or None."""
    d = start
    while True:
        if os.path.exists(os.path.join(d, marker)):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def find_repo(starts, fallback):
    """The repository's top directory (see DOCUMENTATION), or None without a start."""
    for marker in (".git", os.path.join("flux", "cluster.yaml")):
        for start in starts:
            found = nearest(start, marker)
            if found and not in_collection(found):
                return found
    return fallback


def ansible_dir(repo):
    sub = os.path.join(repo, "ansible")
    return sub if os.path.isdir(sub) else repo


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        repo = find_repo(*starts_of(variables.get("ansible_inventory_sources"), variables.get("playbook_dir"), os.getcwd()))
        if repo is None:
            raise AnsibleLookupError("gitops.k3s_flux.repo_dir: no inventory, playbook or current directory outside a collection to look from")
        what = terms[0] if terms else ""
        if what == "ansible":
            return [ansible_dir(repo)]
        if what:
            raise AnsibleLookupError("gitops.k3s_flux.repo_dir: term %r is not '' or 'ansible'" % what)
        return [repo]
