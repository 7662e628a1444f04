#!/usr/bin/python
# Copyright: gitops.k3s_flux contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the module's Go spec by `make docs`; do not edit.
# gitops.k3s_flux.k3s_etcd_restore is a Go binary: its action plugin runs
# plugins/bin/<os>_<arch>/k3s_node on the host, built for its OS and CPU.
# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.

from __future__ import annotations

DOCUMENTATION = r"""
module: k3s_etcd_restore
short_description: One server's step of restoring a k3s etcd snapshot
version_added: 0.1.0
description:
- 'k3s restores an etcd snapshot this way (its Backup and Restore documentation):
  stop k3s on every server; on one, run C(k3s server --cluster-reset --cluster-reset-restore-path=<snapshot>
  --etcd-s3=false) (the snapshot is the file on the node: with C(etcd-s3) on in the
  config, k3s would read the path as a key in the bucket), which restores the snapshot,
  makes that server the only etcd member and exits; on each other server, set C(<data_dir>/server/db)
  aside; then start k3s on the first, and on the others one at a time, which join
  it again. This module does one node''s step; playbook restore runs them in order
  and then role k8s_cluster, which starts k3s and waits until every Node is Ready.'
- 'C(step=stop) stops the C(k3s) unit. C(step=reset) stops it too, then runs the cluster
  reset with the snapshot (a file name in the snapshot directory, as C(k3s etcd-snapshot
  ls) and module k3s_etcd_snapshot list them, or an absolute path on the node), k3s''s
  config files applying. C(step=rejoin) stops k3s and moves C(<data_dir>/server/db)
  to C(<data_dir>/server/db.pre-restore-<unix time>) (kept, not deleted: remove it
  once the cluster is back), so that k3s joins again at its next start; given a C(token)
  that is not the server''s own (every server was rebuilt from scratch, so each runs
  a new cluster of its own), it sets that cluster''s C(server/tls), C(cred), C(token),
  C(node-token) and C(agent-token) aside the same way: k3s would refuse to join the
  restored cluster with them.'
- 'Nothing is started: the next step (role k8s_cluster''s k3s_node) starts k3s and
  waits for it. Check mode runs nothing and says what would be done. Not idempotent:
  each run of C(reset) restores again.'
- 'Before anything stops, C(step=reset) (in check mode too) reads the snapshot and
  refuses a file k3s''s restore would fail on after moving the etcd data aside: it
  must be etcd''s bbolt database (valid meta pages: magic, version 2, checksum; a
  page size etcd writes; as many bytes as its high-water mark counts) followed by
  the sha256 etcd''s snapshot save appends, and match it; a name ending in C(.zip)
  (C(etcd-snapshot-compress)) must be a zip archive of one such file. C(/etc/passwd),
  a copy cut short and the live C(server/db/etcd/member/snap/db) are refused naming
  what is wrong.'
- 'k3s''s cluster reset fails now and then on a busy machine on a race of its own
  (two of its goroutines defragment etcd while one copies the etcd directory: C(failed
  to create temporary datastore client: open .../member/snap/db.tmp.<n>: no such file
  or directory)); that failure alone is run again, three attempts at most, two seconds
  apart, each retry said in a warning. k3s moves the partial restore aside first and
  restores from the snapshot file again.'
- 'When k3s''s cluster reset fails, k3s is stopped on every server and k3s may have
  moved C(<data_dir>/server/db/etcd) to C(etcd-old-<unix time>): the message says
  where the data it had is, how to retry and how to roll back, and the module leaves
  the mark C(<data_dir>/server/db/gitops.k3s_flux-restore-pending) (holding that message)
  on the node. While it is there, module k3s_node refuses to start k3s on the node
  (a first controller with C(cluster-init) would start a new, empty cluster), unless
  its C(abandon_restore) is set. A reset that succeeds removes the mark.'
- 'Only a data directory k3s makes (its own name has C(k3s) in it) is touched; any
  other is refused before anything changes. A Go binary: the node needs no Python.'
author:
- gitops.k3s_flux maintainers (@gitops-k3s-flux)
options:
  data_dir:
    description:
    - k3s's C(data-dir).
    type: path
    default: /var/lib/rancher/k3s
  snapshot:
    description:
    - 'The snapshot: its file name in the snapshot directory (C(snapshot_dir)), or
      an absolute path on the node. Required with C(step=reset).'
    type: str
  snapshot_dir:
    description:
    - 'Where k3s keeps snapshots, in which a C(snapshot) given by name is looked for.
      Default: k3s''s C(etcd-snapshot-dir) as the node''s k3s config (C(/etc/rancher/k3s/config.yaml)
      and its C(config.yaml.d) drop-ins) sets it, else C(<data_dir>/server/db/snapshots).'
    type: path
  step:
    description:
    - This node's step, as described above.
    type: str
    required: true
    choices:
    - stop
    - reset
    - rejoin
  timeout:
    description:
    - Seconds the cluster reset may take.
    type: int
    default: 600
  token:
    description:
    - 'The token of the cluster the snapshot was taken on (with C(step=rejoin): see
      above). With C(step=reset): k3s restores a snapshot only with it (its bootstrap
      data is encrypted with it), and a cluster rebuilt from scratch has a new one.
      Given to the cluster reset as C(K3S_TOKEN) (never on its command line); where
      k3s''s config sets another C(token) (the cluster token was rotated since the
      snapshot), which would win over C(K3S_TOKEN), the reset reads a private copy
      of the config and its drop-ins, 0600 in the task''s temporary directory and
      removed after it, whose last drop-in sets the token given (C(K3S_CONFIG_FILE));
      the config itself is left alone. Default: the C(token) of k3s''s config, else
      the server''s own C(<data_dir>/server/token). Before anything stops, the snapshot
      must hold bootstrap data for the token the reset would use, else the module
      refuses, saying so: k3s itself finds out only after it set the etcd data aside.'
    type: str
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
    platforms: linux
"""

EXAMPLES = r"""
- name: Stop k3s on every server
  gitops.k3s_flux.k3s_etcd_restore:
    step: stop
  become: true

- name: Restore the snapshot on the first server
  gitops.k3s_flux.k3s_etcd_restore:
    step: reset
    snapshot: pre-upgrade-v1.36.3-k3s1-node1-1764907200
  become: true
"""

RETURN = r"""
identity_moved_to:
  description:
  - 'With C(step=rejoin) and a C(token) that is not the server''s own: where its certificates,
    credentials and token files (C(server/tls), C(cred), C(token), C(node-token),
    C(agent-token)) were set aside.'
  returned: with step=rejoin
  type: list
  sample:
  - /var/lib/rancher/k3s/server/tls.pre-restore-1764910000
moved_to:
  description:
  - Where the etcd data was set aside, with C(step=rejoin); empty when there was none.
  returned: with step=rejoin
  type: str
  sample: /var/lib/rancher/k3s/server/db.pre-restore-1764910000
path:
  description:
  - The snapshot file restored, with C(step=reset).
  returned: with step=reset
  type: str
  sample: /var/lib/rancher/k3s/server/db/snapshots/pre-upgrade-v1.36.3-k3s1-node1-1764907200
stopped:
  description:
  - 'Whether k3s was running and was (in check mode: would be) stopped.'
  returned: always
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "step": {
                "type": "str",
                "required": True,
                "choices": ["stop", "reset", "rejoin"],
            },
            "snapshot": {
                "type": "str",
            },
            "snapshot_dir": {
                "type": "path",
            },
            "data_dir": {
                "type": "path",
                "default": "/var/lib/rancher/k3s",
            },
            "timeout": {
                "type": "int",
                "default": 600,
            },
            "token": {
                "type": "str",
                "no_log": True,
            },
        },
        required_if=[
            ("step", "reset", ["snapshot"]),
        ],
        supports_check_mode=True,
    )
    module.fail_json(
        msg="gitops.k3s_flux.k3s_etcd_restore runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection",
    )


if __name__ == "__main__":
    main()
