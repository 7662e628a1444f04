#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_kubeconfig is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_kubeconfig
short_description: Write a k3s cluster's admin kubeconfig on the controller, pointed
  at its API endpoint
version_added: 0.1.0
description:
- Takes the admin kubeconfig k3s writes on a server (C(/etc/rancher/k3s/k3s.yaml),
  as M(gitops.k3s_flux.k3s_node_info) returns it), points every cluster in it at C(server)
  and renames what k3s calls C(default) (cluster, user, context, current context)
  to C(cluster_name).
- Writes it to C(dest) atomically, mode 0600, creating a missing directory with mode
  0700 and a C(.gitignore) in it that keeps everything there out of git (the directory
  is often inside the GitOps repository, where a C(git add -A) would publish cluster-admin
  credentials); an existing file with other content is replaced (kept beside it with
  C(backup)), one with the same content but another mode gets 0600.
- 'With C(merge), C(dest) is a kubeconfig of the user''s own (such as C(~/.kube/config)):
  the cluster, user and context named C(cluster_name) are added or replaced, everything
  else in it is kept (other contexts, their credentials, preferences), and the current
  context is set to C(cluster_name) only when the file has none. The file is written
  whole again, as C(kubectl config) writes it (comments are not kept); before the
  first merge into an existing file (one holding none of the entries this module marks),
  it is copied beside itself as C(<dest>.<pid>.<timestamp>~), mode 0600, returned
  as C(backup_file).'
- 'A merge touches only what it wrote: each cluster, user and context it writes carries
  a kubeconfig extension named C(gitops.k3s_flux) (C(managed-by: gitops.k3s_flux)),
  which kubectl and client-go keep. An entry named C(cluster_name) without it is the
  user''s: it is never replaced or removed, and a merge that would replace it is refused,
  naming it. Entries an earlier version of the collection wrote carry no mark; they
  are taken over (marked, with a warning) when the cluster has the same API endpoint
  and CA as the one written, the user holds only a client certificate and key (as
  k3s''s admin does) and the context joins those two; any other is refused.'
- 'A merge refuses a C(dest) that is not a kubeconfig and leaves it byte for byte
  as it was: kubectl takes any mapping for one and drops what it does not know, a
  merge is stricter since it writes the file whole again. A kubeconfig here is an
  empty file, or one YAML or JSON mapping whose top-level keys are all a kubeconfig''s
  (C(apiVersion), C(kind), C(clusters), C(contexts), C(users), C(current-context),
  C(preferences), C(extensions)), with C(kind=Config) (C(apiVersion=v1) when given)
  or, without a kind, at least one of C(clusters), C(contexts), C(users), C(current-context),
  C(preferences); and that client-go reads. A compose file, a package.json or C(notes:
  really) is not.'
- 'C(state=absent) takes out the cluster, user and context named C(cluster_name) that
  carry the mark, and nothing else: an unmarked one stays (a warning names it), the
  current context is unset only when it was the context removed, and another context
  that used the removed cluster or user is left as it is, with a warning naming it.
  A file without them is left as it is.'
- Role k8s_cluster runs it on the controller after the first controller's kubeconfig
  was read, and with C(merge) for C(k8s_cluster_kubeconfig_merge); playbook reset
  takes the context out again.
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  backup:
    description:
    - Keep a file with other content beside it, as C(<dest>.<pid>.<timestamp>~), before
      replacing it. With C(merge), before every change (the first merge into a file
      keeps it anyway).
    type: bool
    default: false
  cluster_name:
    description:
    - 'The name of the cluster, user and context that k3s calls C(default). Default:
      as written.'
    type: str
  content:
    description:
    - The admin kubeconfig, as k3s wrote it on a server. Required with C(state=present).
    type: str
  dest:
    description:
    - Where to write it on the controller.
    type: path
    required: true
  merge:
    description:
    - 'Merge into C(dest) (a kubeconfig with other contexts) instead of replacing
      it: only the cluster, user and context named C(cluster_name), which must be
      set, are written, each marked as this module''s. A C(dest) that is not a kubeconfig,
      or that holds an entry of that name this module did not write, is refused and
      left as it is.'
    type: bool
    default: false
  server:
    description:
    - 'The API endpoint every cluster in it is pointed at, an C(https://) URL (k3s
      writes C(https://127.0.0.1:6443)). Default: as written.'
    type: str
  state:
    description:
    - 'C(absent) takes the cluster, user and context named C(cluster_name) that this
      module wrote (marked) out of C(dest) (with C(merge) only: never a whole file);
      the current context, if it was that one, is unset.'
    type: str
    default: present
    choices:
    - present
    - absent
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without
      modifying target.
  diff_mode:
    support: full
    description: Will return details on what has changed (or possibly needs changing
      in check_mode), when in diff mode.
  platform:
    support: full
    description: 'A Go binary module: the target needs no Python.'
    platforms: posix
notes:
- 'The diff shows the kubeconfig with its credentials replaced by C(<redacted>): a
  user''s client key, token and password, an auth-provider''s id, refresh and access
  tokens and client secret, and every arg and every C(env) value of an exec plugin
  (kubelogin takes its client secret in C(--oidc-client-secret=...)). With C(merge)
  it shows only the entries named C(cluster_name) (and the current context when it
  is that one), never the rest of the user''s file. An existing file is parsed to
  find the credentials whatever its style (rendered again from the parse when the
  line-by-line redaction would leave one, C(<not shown: does not parse>) when it does
  not parse); those values are masked in every result (an exec C(env) value when its
  name says it is a secret, an exec arg when the flag''s name does).'
- 'A C(dest) that is a symbolic link is followed: the file it points to is written.'
"""

EXAMPLES = r"""
- name: Read the kubeconfig on the first server
  gitops.k3s_flux.k3s_node_info:
    return_kubeconfig: true
  register: first
  become: true
  no_log: true

- name: Write it on the controller
  gitops.k3s_flux.k3s_kubeconfig:
    content: "{{ first.kubeconfig }}"
    dest: "{{ playbook_dir }}/.generated/kubeconfig"
    server: https://10.0.0.11:6443
    cluster_name: homelab
    backup: true
  delegate_to: localhost

- name: Add it to the user's own kubeconfig as context homelab, keeping the others
  gitops.k3s_flux.k3s_kubeconfig:
    content: "{{ first.kubeconfig }}"
    dest: ~/.kube/config
    merge: true
    server: https://10.0.0.11:6443
    cluster_name: homelab
  delegate_to: localhost
"""

RETURN = r"""
backup_file:
  description:
  - The copy of the file that was replaced or merged into, mode 0600.
  returned: changed, and backup or the first merge into an existing file
  type: str
  sample: /home/me/.kube/homelab.4242.2026-12-03@09:41:00~
context:
  description:
  - The current context.
  returned: always
  type: str
  sample: homelab
dest:
  description:
  - The file written (the target of a link).
  returned: always
  type: str
  sample: /home/me/.kube/homelab
ignore_file:
  description:
  - The C(.gitignore) written in the directory the module made for C(dest).
  returned: when the directory was made
  type: str
  sample: /home/me/home-ops/ansible/.generated/.gitignore
server:
  description:
  - The API endpoint of the current context's cluster.
  returned: always
  type: str
  sample: https://10.0.0.11:6443
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "content": {
                "type": "str",
                "no_log": True,
            },
            "dest": {
                "type": "path",
                "required": True,
            },
            "server": {
                "type": "str",
            },
            "cluster_name": {
                "type": "str",
            },
            "merge": {
                "type": "bool",
                "default": False,
            },
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "backup": {
                "type": "bool",
                "default": False,
            },
        },
        required_if=[
            ("state", "present", ["content"]),
            ("merge", True, ["cluster_name"]),
            ("state", "absent", ["cluster_name"]),
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_kubeconfig runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
