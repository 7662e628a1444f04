#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.seed_secret is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/controller on the controller, built for its OS and CPU
# (fetched from the release on first use).
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: seed_secret
short_description: Create the namespaces, seed Secrets and seed ConfigMaps Flux needs
  before it runs
version_added: 0.1.0
description:
- Creates namespaces by name only (no labels or annotations), so that Flux can take
  them over later without a fight.
- 'Creates or updates Secrets by server-side apply with the field manager C(gitops.k3s_flux):
  a git deploy key with C(known_hosts) built from GitHub''s, GitLab''s or Codeberg''s
  published host keys, a SOPS age key, or any data (for example Infisical universal
  auth in each tier namespace).'
- 'Values are compared by content and never returned, logged or shown: diffs show
  each key as C(<redacted>), or C(<redacted, changed>) on the new side where its value
  changed, and nothing derived from a value.'
- 'Creates ConfigMaps once (cluster variables for Flux''s C(postBuild.substituteFrom),
  say): a missing one is created, an existing one is never changed, so that Flux or
  you own it from then on; its values are no secret and show in the diff.'
- A Secret that Flux has adopted (it carries a C(kustomize.toolkit.fluxcd.io/name)
  or C(helm.toolkit.fluxcd.io/name) label) is left alone and reported as adopted,
  unless C(force=true).
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  ca_cert:
    description:
    - A CA bundle to verify the API server with, instead of the kubeconfig's.
    - Must be an existing file; checked before anything is done.
    type: path
    aliases:
    - ssl_ca_cert
  config_maps:
    description:
    - 'ConfigMaps to create when missing. One that exists is left as it is, even when
      its data differs (C(differs) lists the keys, with a warning): written once,
      then left to Flux.'
    type: list
    elements: dict
    default: []
    suboptions:
      data:
        description:
        - 'Keys and values: strings, numbers and booleans, stored as they read in
          YAML (V(true), V(3)).'
        type: dict
        required: true
      name:
        description:
        - Name of the ConfigMap.
        - Must be a Kubernetes object name (at most 253 lowercase letters, digits,
          '-' or '.', starting and ending with a letter or digit); checked before
          anything is done.
        type: str
        required: true
      namespace:
        description:
        - Namespace of the ConfigMap.
        - Must be a Kubernetes namespace name (at most 63 lowercase letters, digits
          or '-', starting and ending with a letter or digit); checked before anything
          is done.
        type: str
        required: true
  context:
    description:
    - The kubeconfig context to use. Defaults to the current context.
    type: str
  force:
    description:
    - Update or delete a Secret, or delete a ConfigMap, even when Flux has adopted
      it; replace a Secret whose type differs.
    type: bool
    default: false
  host:
    description:
    - The API server's URL, instead of the kubeconfig's (as role k8s_cluster reaches
      another server while the endpoint's is down).
    type: str
  kubeconfig:
    description:
    - Path to the kubeconfig. Defaults to C($KUBECONFIG), then C(~/.kube/config).
    type: path
  namespaces:
    description:
    - Namespaces to create when missing (name only). Existing ones are not touched.
    - Must be a Kubernetes namespace name (at most 63 lowercase letters, digits or
      '-', starting and ending with a letter or digit); checked before anything is
      done.
    type: list
    elements: str
    default: []
  secrets:
    description:
    - 'Secrets to create or update. Each takes exactly one source of data: O(secrets[].data)/O(secrets[].string_data),
      O(secrets[].git_deploy_key), O(secrets[].git_https), O(secrets[].age_key) or
      O(secrets[].universal_auth).'
    type: list
    elements: dict
    default: []
    suboptions:
      age_key:
        description:
        - A SOPS age identity, validated as an X25519 age key and stored under C(age.agekey).
        type: dict
        suboptions:
          key:
            description:
            - The identity text (C(AGE-SECRET-KEY-1...)), comments allowed.
            type: str
          key_file:
            description:
            - A file holding the identity, read on the controller.
            - Must be an existing file; checked before anything is done.
            type: path
      data:
        description:
        - Keys and base64-encoded values, as in a Secret's C(data).
        type: dict
      git_deploy_key:
        description:
        - 'A git SSH deploy key for Flux: writes C(identity), C(identity.pub) (derived
          from the private key) and C(known_hosts).'
        type: dict
        suboptions:
          github_meta_file:
            description:
            - A saved copy of U(https://api.github.com/meta) to take GitHub's keys
              from instead of the built-in ones, with O(secrets[].git_deploy_key.known_hosts=github)
              only. Each key must match its published fingerprint and one the collection
              pins, so a tampered file fails; a key the file does not publish a fingerprint
              for is left out with a warning.
            - Must be an existing file; checked before anything is done.
            type: path
          known_hosts:
            description:
            - V(github), V(gitlab) or V(codeberg) builds the file from that forge's
              published SSH host keys (github.com, gitlab.com, codeberg.org), checked
              against their published fingerprints.
            - Any other value is used as given, after each line parses as an OpenSSH
              known_hosts entry.
            type: str
            default: github
          private_key:
            description:
            - The private key (OpenSSH or PEM, without passphrase).
            type: str
          private_key_file:
            description:
            - A file holding the private key, read on the controller.
            - Must be an existing file; checked before anything is done.
            type: path
      git_https:
        description:
        - 'Git credentials for an HTTPS URL, as source-controller reads them: C(username)
          and C(password) (a Gitea or GitHub token works as the password), or C(bearerToken).'
        type: dict
        suboptions:
          bearer_token:
            description:
            - A bearer token, stored under C(bearerToken) instead of a username and
              password.
            type: str
          ca_file:
            description:
            - A file on the controller holding the PEM certificate(s) of the CA that
              signed the git server's certificate (a Gitea behind a private CA), stored
              under C(ca.crt).
            - Must be an existing file; checked before anything is done.
            type: path
          password:
            description:
            - The password or token.
            type: str
          username:
            description:
            - 'The username (not a secret: it stays readable in the output).'
            type: str
            default: git
      name:
        description:
        - Name of the Secret.
        - Must be a Kubernetes object name (at most 253 lowercase letters, digits,
          '-' or '.', starting and ending with a letter or digit); checked before
          anything is done.
        type: str
        required: true
      namespace:
        description:
        - Namespace of the Secret.
        - Must be a Kubernetes namespace name (at most 63 lowercase letters, digits
          or '-', starting and ending with a letter or digit); checked before anything
          is done.
        type: str
        required: true
      string_data:
        description:
        - Keys and plain values, as in a Secret's C(stringData).
        type: dict
      type:
        description:
        - The Secret type.
        type: str
        default: Opaque
      universal_auth:
        description:
        - An Infisical machine identity's universal auth credentials, stored under
          C(clientId) and C(clientSecret), the keys the Infisical operator reads.
        type: dict
        suboptions:
          client_id:
            description:
            - The client ID.
            type: str
            required: true
          client_secret:
            description:
            - The client secret.
            type: str
            required: true
  state:
    description:
    - V(absent) deletes the listed Secrets and ConfigMaps (namespaces are never deleted).
    type: str
    default: present
    choices:
    - present
    - absent
  validate_certs:
    description:
    - Whether to verify the API server's certificate. Defaults to what the kubeconfig
      says.
    type: bool
    aliases:
    - verify_ssl
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
- C(known_hosts=github) writes one line per GitHub host key (ecdsa, ed25519, rsa)
  for C(github.com) and again for C([ssh.github.com]:443) (GitHub's SSH over the HTTPS
  port), each checked against GitHub's published SHA256 fingerprint; the RSA key GitHub
  retired in March 2023 is refused. C(known_hosts=gitlab) writes gitlab.com's three
  keys for C(gitlab.com) (not C(altssh.gitlab.com), which GitLab's list does not name),
  C(known_hosts=codeberg) codeberg.org's three for C(codeberg.org), each checked against
  the SHA256 fingerprint the forge publishes (U(https://docs.gitlab.com/user/gitlab_com/#ssh-host-keys-fingerprints),
  U(https://docs.codeberg.org/security/ssh-fingerprint/)). It never runs ssh-keyscan.
- Check mode decides from what is in the cluster and validates changes with a server-side
  dry run; nothing is persisted. When the C(kubeconfig) file does not exist yet (a
  first run), it plans as for a new, empty cluster, with a warning.
- A second run with the same input sends no write to the API server.
"""

EXAMPLES = r"""
- name: Seed what Flux resolves for itself
  gitops.k3s_flux.seed_secret:
    kubeconfig: "{{ playbook_dir }}/../.generated/kubeconfig"
    namespaces: [flux-system, platform, apps]
    secrets:
      - name: git-deploy-key
        namespace: flux-system
        git_deploy_key:
          private_key_file: "{{ vault_dir }}/flux-deploy-key"
          known_hosts: github
      - name: sops-age
        namespace: flux-system
        age_key:
          key: "{{ vault_sops_age_key }}"
      - name: infisical-universal-auth
        namespace: platform
        universal_auth:
          client_id: "{{ vault_infisical_client_id }}"
          client_secret: "{{ vault_infisical_client_secret }}"
    config_maps:
      - name: cluster-vars
        namespace: flux-system
        data:
          cluster_domain: home.example.org
          worker_count: 3
"""

RETURN = r"""
config_maps:
  description:
  - 'Each ConfigMap: its keys, whether the task created (or deleted) it, the keys
    whose value in the cluster differs from the one given, whether Flux has adopted
    it.'
  returned: always
  type: list
  sample:
  - adopted: false
    created: true
    differs: []
    keys:
    - cluster_domain
    name: cluster-vars
    namespace: flux-system
namespaces:
  description:
  - Each namespace and whether the task created it.
  returned: always
  type: list
  sample:
  - created: true
    name: flux-system
secrets:
  description:
  - 'Each Secret: its keys (never values), whether it changed, whether Flux has adopted
    it.'
  returned: always
  type: list
  sample:
  - adopted: false
    changed: true
    keys:
    - identity
    - identity.pub
    - known_hosts
    name: git-deploy-key
    namespace: flux-system
    type: Opaque
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "kubeconfig": {
                "type": "path",
            },
            "context": {
                "type": "str",
            },
            "host": {
                "type": "str",
            },
            "validate_certs": {
                "type": "bool",
                "aliases": ["verify_ssl"],
            },
            "ca_cert": {
                "type": "path",
                "aliases": ["ssl_ca_cert"],
            },
            "namespaces": {
                "type": "list",
                "elements": "str",
                "default": [],
            },
            "secrets": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "no_log": False,
                "options": {
                    "name": {
                        "type": "str",
                        "required": True,
                    },
                    "namespace": {
                        "type": "str",
                        "required": True,
                    },
                    "type": {
                        "type": "str",
                        "default": "Opaque",
                    },
                    "data": {
                        "type": "dict",
                        "no_log": True,
                    },
                    "string_data": {
                        "type": "dict",
                        "no_log": True,
                    },
                    "git_deploy_key": {
                        "type": "dict",
                        "no_log": False,
                        "options": {
                            "private_key": {
                                "type": "str",
                                "no_log": True,
                            },
                            "private_key_file": {
                                "type": "path",
                            },
                            "known_hosts": {
                                "type": "str",
                                "default": "github",
                            },
                            "github_meta_file": {
                                "type": "path",
                            },
                        },
                        "mutually_exclusive": [
                            ["private_key", "private_key_file"],
                        ],
                        "required_one_of": [
                            ["private_key", "private_key_file"],
                        ],
                    },
                    "git_https": {
                        "type": "dict",
                        "options": {
                            "username": {
                                "type": "str",
                                "default": "git",
                            },
                            "password": {
                                "type": "str",
                                "no_log": True,
                            },
                            "bearer_token": {
                                "type": "str",
                                "no_log": True,
                            },
                            "ca_file": {
                                "type": "path",
                            },
                        },
                        "mutually_exclusive": [
                            ["password", "bearer_token"],
                        ],
                        "required_one_of": [
                            ["password", "bearer_token"],
                        ],
                    },
                    "age_key": {
                        "type": "dict",
                        "no_log": False,
                        "options": {
                            "key": {
                                "type": "str",
                                "no_log": True,
                            },
                            "key_file": {
                                "type": "path",
                            },
                        },
                        "mutually_exclusive": [
                            ["key", "key_file"],
                        ],
                        "required_one_of": [
                            ["key", "key_file"],
                        ],
                    },
                    "universal_auth": {
                        "type": "dict",
                        "options": {
                            "client_id": {
                                "type": "str",
                                "required": True,
                                "no_log": True,
                            },
                            "client_secret": {
                                "type": "str",
                                "required": True,
                                "no_log": True,
                            },
                        },
                    },
                },
                "mutually_exclusive": [
                    ["data", "git_deploy_key", "git_https", "age_key", "universal_auth"],
                    ["string_data", "git_deploy_key", "git_https", "age_key", "universal_auth"],
                ],
                "required_one_of": [
                    ["data", "string_data", "git_deploy_key", "git_https", "age_key", "universal_auth"],
                ],
            },
            "config_maps": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "name": {
                        "type": "str",
                        "required": True,
                    },
                    "namespace": {
                        "type": "str",
                        "required": True,
                    },
                    "data": {
                        "type": "dict",
                        "required": True,
                    },
                },
            },
            "state": {
                "type": "str",
                "default": "present",
                "choices": ["present", "absent"],
            },
            "force": {
                "type": "bool",
                "default": False,
            },
        },
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.seed_secret runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
