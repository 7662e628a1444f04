#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.flux_repo_check is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: flux_repo_check
short_description: Predict what Flux will make of a repository before it is pushed
version_added: 0.1.0
description:
- Reads the repository on the Ansible controller, as Flux would read it once pushed,
  and changes nothing.
- 'First the files source-controller leaves out of the artifact: its built-in exclusions
  (images such as C(*.png), archives, CI files, C(.sops.yaml)) and every C(.sourceignore)
  at any depth, with gitignore semantics, as source-controller applies them (fluxcd/pkg''s
  patterns; any C(.sourceignore) line turns the built-in list off except C(.git*)).'
- 'Then every Flux Kustomization of the FluxInstance''s sync, built as kustomize-controller
  builds it (fluxcd/pkg/kustomize''s generator and build over kustomize''s library)
  from the files the artifact keeps: the sync''s C(spec.sync.path) first, then each
  Kustomization of the same GitRepository that a build outputs, recursively.'
- A file a build needs that the artifact leaves out is reported with the rule that
  excluded it and the C(.sourceignore) line that keeps it; any other build error is
  reported as kustomize gives it, with paths relative to the repository.
- 'Cross-checks with the bootstrap: C(spec.sync.pullSecret) and every C(spec.decryption.secretRef)
  must be among O(secrets); every C(spec.postBuild.substituteFrom) reference not marked
  C(optional) must be among O(secrets) or O(config_maps), or be created by a build
  of the repository; an SSH C(spec.sync.url)''s host must be one O(known_hosts) covers.'
- 'A FluxInstance that a build applies (seed 000''s C(flux/cluster.yaml) inside its
  own C(sync.path: flux) with no C(kustomization.yaml) there: kustomize-controller''s
  generated kustomization takes every manifest under the path) is Flux reconciling
  itself, as flux-operator documents upgrades through git: a warning, with its consequence
  (with C(prune), removing or renaming the file deletes the FluxInstance, and Flux
  with it) and two fixes (the C(kustomize.toolkit.fluxcd.io/prune: disabled) annotation
  on it, or an explicit C(kustomization.yaml) in the path that leaves it out). No
  warning when it carries that annotation or the Kustomization that applies it does
  not prune. It is a problem only when it differs from the FluxInstance the play applies
  (O(instance), with O(host_network)''s patches), compared as data (its namespace
  and name, then each field of C(spec)): the play and Flux would each apply their
  own.'
- 'Credentials a push would publish: every file git would push (tracked, or untracked
  and not ignored: what C(git add -A) adds; outside a git work tree, every file) is
  read for a kubeconfig with credentials (a user''s C(client-key-data), C(token),
  C(password) or auth-provider tokens, with or without C(clusters)), a PEM private
  key (a whole block, header, base64 body and footer: a header line alone, as a README
  shows it, is not a key), an age secret key (in either case), a k3s token (C(K10...)),
  a Kubernetes Secret with data in the clear (an item of a C(kind: List) too, as C(kubectl
  get secrets -o yaml) writes it, and C(data) given through a YAML alias), a kustomize
  C(secretGenerator)''s C(literals) and the files it reads (C(envs), C(files)) in
  plain text, and this collection''s secret role variables (C(k8s_cluster_token),
  C(flux_bootstrap_infisical_auth) and the others marked no_log) set in plain text,
  in YAML or in an INI inventory (C(k8s_cluster_token=...)). Each YAML document is
  read alone: one that does not parse hides nothing after it. SOPS-encrypted values
  (C(ENC[...])), Ansible Vault files and values, Jinja templates and Flux C(${VAR})
  substitutions (in C(data) and C(stringData)) pass; a file with SOPS metadata is
  read like any other, so what SOPS left in plain text is found, and a value under
  a secret''s name (a password, a token) beside SOPS metadata is reported (an C(encrypted_regex)
  such as C(^(data|stringData)$) leaves it out). Each finding names the file, the
  line and the kind, never the value, and the fix (ignore the file, or encrypt it;
  rotate what was pushed). Binary files, links and files over 4 MiB are not read.'
- Fails when it finds a problem, C(msg) listing each; C(problems) holds them. A clean
  report of the builds is kept per repository, so a re-run with nothing changed skips
  them (see C(cached)); the credential scan runs every time.
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  config_maps:
    description:
    - The ConfigMaps that will exist when Flux starts, as C(namespace/name) (cluster
      variables the bootstrap seeds, for C(postBuild.substituteFrom)).
    type: list
    elements: str
    default: []
  host_network:
    description:
    - 'The play applies the FluxInstance with M(gitops.k3s_flux.flux_instance)''s
      C(host_network) (its host-network patches added to C(spec.kustomize.patches)):
      what a FluxInstance in a sync path is compared with. Role C(flux_bootstrap)
      passes C(flux_bootstrap_cni_from_flux).'
    type: bool
    default: false
  instance:
    description:
    - 'The FluxInstance file. Default: C(flux/cluster.yaml) under O(path).'
    type: path
  known_hosts:
    description:
    - 'The deploy key''s known_hosts: C(github), C(gitlab) or C(codeberg) (that forge''s
      hosts, as M(gitops.k3s_flux.seed_secret) writes them: C(github.com) and C([ssh.github.com]:443),
      C(gitlab.com), C(codeberg.org)) or known_hosts lines. Default: the SSH host
      is not checked.'
    type: str
  path:
    description:
    - The repository's top directory (what source-controller checks out).
    type: path
    required: true
  secrets:
    description:
    - 'The Secrets that will exist when Flux starts, as C(namespace/name): those the
      bootstrap seeds and those already in the cluster.'
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without
      modifying target.
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing
      in check_mode), when in diff mode.
  platform:
    support: full
    description: 'A Go binary module: the target needs no Python.'
    platforms: posix
notes:
- Only Kustomizations of the sync's own GitRepository are built (others are listed
  in C(skipped)); remote bases are not fetched, so a build that uses one reports its
  error.
- The substituted values themselves and SOPS decryption happen after the build in
  kustomize-controller and are not checked.
"""

EXAMPLES = r"""
- name: Check the repository before the hand-off
  gitops.k3s_flux.flux_repo_check:
    path: "{{ playbook_dir }}/.."
    secrets:
      - flux-system/git-deploy-key
      - flux-system/sops-age
    known_hosts: github
  delegate_to: localhost
"""

RETURN = r"""
cached:
  description:
  - 'True when nothing the check reads changed since its last clean run (every file''s
    path, the content of each file the artifact keeps, the FluxInstance, the options,
    the binary): the builds'' report is that run''s, kept under C(${XDG_CACHE_HOME:-~/.cache}/gitops.k3s_flux/repo_check/),
    and nothing was built (the credential scan still ran).'
  returned: always
  type: bool
  sample: false
excluded:
  description:
  - The repository's files the artifact leaves out.
  returned: always
  type: list
  sample:
  - .gitignore
  - docs/logo.png
kustomizations:
  description:
  - 'The Flux Kustomizations built: C(name) (namespace/name), C(path), C(resources)
    (how many objects the build made).'
  returned: always
  type: list
  sample:
  - name: flux-system/flux-system
    path: flux
    resources: 2
problems:
  description:
  - 'What Flux would fail on, and the credentials a push would publish: C(kind) (excluded,
    build, secret, substitute, known_hosts, instance, credential), C(kustomization),
    C(path), C(rule) and C(fix) for an excluded file (C(fix) also for a FluxInstance
    in a sync path and a credential), C(message). A FluxInstance in its own sync path
    that is the play''s is not a problem but a warning (C(warnings)), with its C(fix).'
  returned: always
  type: list
  sample:
  - fix: add the line `!/apps/branding/icon.png` to .sourceignore at the repository
      root
    kind: excluded
    kustomization: flux-system/apps
    message: flux-system/apps needs apps/branding/icon.png, which source-controller
      leaves out of the artifact
    path: apps/branding/icon.png
    rule: '"*.png" (source-controller''s built-in default exclusions)'
skipped:
  description:
  - Kustomizations of other sources, not built.
  returned: always
  type: list
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {
                "type": "path",
                "required": True,
            },
            "instance": {
                "type": "path",
            },
            "secrets": {
                "type": "list",
                "elements": "str",
                "default": [],
                "no_log": False,
            },
            "config_maps": {
                "type": "list",
                "elements": "str",
                "default": [],
            },
            "host_network": {
                "type": "bool",
                "default": False,
            },
            "known_hosts": {
                "type": "str",
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.flux_repo_check runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
