package k3setcdrestore

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// module is k3s_etcd_restore.
var module = &ansible.Module{
	Name:             "k3s_etcd_restore",
	ShortDescription: "One server's step of restoring a k3s etcd snapshot",
	Description: []string{
		"k3s restores an etcd snapshot this way (its Backup and Restore documentation): stop k3s on every server; on one, run C(k3s server --cluster-reset --cluster-reset-restore-path=<snapshot> --etcd-s3=false) (the snapshot is the file on the node: with C(etcd-s3) on in the config, k3s would read the path as a key in the bucket), which restores the snapshot, makes that server the only etcd member and exits; on each other server, set C(<data_dir>/server/db) aside; then start k3s on the first, and on the others one at a time, which join it again. This module does one node's step; playbook restore runs them in order and then role k8s_cluster, which starts k3s and waits until every Node is Ready.",
		"C(step=stop) stops the C(k3s) unit. C(step=reset) stops it too, then runs the cluster reset with the snapshot (a file name in the snapshot directory, as C(k3s etcd-snapshot ls) and module k3s_etcd_snapshot list them, or an absolute path on the node), k3s's config files applying. C(step=rejoin) stops k3s and moves C(<data_dir>/server/db) to C(<data_dir>/server/db.pre-restore-<unix time>) (kept, not deleted: remove it once the cluster is back), so that k3s joins again at its next start; given a C(token) that is not the server's own (every server was rebuilt from scratch, so each runs a new cluster of its own), it sets that cluster's C(server/tls), C(cred), C(token), C(node-token) and C(agent-token) aside the same way: k3s would refuse to join the restored cluster with them.",
		"Nothing is started: the next step (role k8s_cluster's k3s_node) starts k3s and waits for it. Check mode runs nothing and says what would be done. Not idempotent: each run of C(reset) restores again.",
		"Before anything stops, C(step=reset) (in check mode too) reads the snapshot and refuses a file k3s's restore would fail on after moving the etcd data aside: it must be etcd's bbolt database (valid meta pages: magic, version 2, checksum; a page size etcd writes; as many bytes as its high-water mark counts) followed by the sha256 etcd's snapshot save appends, and match it; a name ending in C(.zip) (C(etcd-snapshot-compress)) must be a zip archive of one such file. C(/etc/passwd), a copy cut short and the live C(server/db/etcd/member/snap/db) are refused naming what is wrong.",
		"k3s's cluster reset fails now and then on a busy machine on a race of its own (two of its goroutines defragment etcd while one copies the etcd directory: C(failed to create temporary datastore client: open .../member/snap/db.tmp.<n>: no such file or directory)); that failure alone is run again, three attempts at most, two seconds apart, each retry said in a warning. k3s moves the partial restore aside first and restores from the snapshot file again.",
		"When k3s's cluster reset fails, k3s is stopped on every server and k3s may have moved C(<data_dir>/server/db/etcd) to C(etcd-old-<unix time>): the message says where the data it had is, how to retry and how to roll back, and the module leaves the mark C(<data_dir>/server/db/gitops.k3s_flux-restore-pending) (holding that message) on the node. While it is there, module k3s_node refuses to start k3s on the node (a first controller with C(cluster-init) would start a new, empty cluster), unless its C(abandon_restore) is set. A reset that succeeds removes the mark.",
		"Only a data directory k3s makes (its own name has C(k3s) in it) is touched; any other is refused before anything changes. A Go binary: the node needs no Python.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "none",
	Platforms: "linux",
	Examples: `
- name: Stop k3s on every server
  gitops.k3s_flux.k3s_etcd_restore:
    step: stop
  become: true

- name: Restore the snapshot on the first server
  gitops.k3s_flux.k3s_etcd_restore:
    step: reset
    snapshot: pre-upgrade-v1.36.3-k3s1-node1-1764907200
  become: true
`,
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "step", Required: true, Choices: []any{"stop", "reset", "rejoin"}, Description: []string{"This node's step, as described above."}},
		{Name: "snapshot", Description: []string{"The snapshot: its file name in the snapshot directory (C(snapshot_dir)), or an absolute path on the node. Required with C(step=reset)."}},
		{Name: "snapshot_dir", Type: ansible.TypePath, Description: []string{"Where k3s keeps snapshots, in which a C(snapshot) given by name is looked for. Default: k3s's C(etcd-snapshot-dir) as the node's k3s config (C(/etc/rancher/k3s/config.yaml) and its C(config.yaml.d) drop-ins) sets it, else C(<data_dir>/server/db/snapshots)."}},
		{Name: "data_dir", Type: ansible.TypePath, Default: k3snode.DefaultPaths.DataDir, Description: []string{"k3s's C(data-dir)."}},
		{Name: "timeout", Type: ansible.TypeInt, Default: 600, Positive: true, Description: []string{"Seconds the cluster reset may take."}},
		{Name: "token", NoLog: true, Description: []string{"The token of the cluster the snapshot was taken on (with C(step=rejoin): see above). With C(step=reset): k3s restores a snapshot only with it (its bootstrap data is encrypted with it), and a cluster rebuilt from scratch has a new one. Given to the cluster reset as C(K3S_TOKEN) (never on its command line); where k3s's config sets another C(token) (the cluster token was rotated since the snapshot), which would win over C(K3S_TOKEN), the reset reads a private copy of the config and its drop-ins, 0600 in the task's temporary directory and removed after it, whose last drop-in sets the token given (C(K3S_CONFIG_FILE)); the config itself is left alone. Default: the C(token) of k3s's config, else the server's own C(<data_dir>/server/token). Before anything stops, the snapshot must hold bootstrap data for the token the reset would use, else the module refuses, saying so: k3s itself finds out only after it set the etcd data aside."}},
	},
		RequiredIf: []ansible.RequiredIf{{Key: "step", Value: "reset", Requirements: []string{"snapshot"}}},
	},
	Returns: []ansible.Return{
		{Name: "stopped", Description: []string{"Whether k3s was running and was (in check mode: would be) stopped."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "path", Description: []string{"The snapshot file restored, with C(step=reset)."}, Returned: "with step=reset", Type: "str", Sample: "/var/lib/rancher/k3s/server/db/snapshots/pre-upgrade-v1.36.3-k3s1-node1-1764907200"},
		{Name: "moved_to", Description: []string{"Where the etcd data was set aside, with C(step=rejoin); empty when there was none."}, Returned: "with step=rejoin", Type: "str", Sample: "/var/lib/rancher/k3s/server/db.pre-restore-1764910000"},
		{Name: "identity_moved_to", Description: []string{"With C(step=rejoin) and a C(token) that is not the server's own: where its certificates, credentials and token files (C(server/tls), C(cred), C(token), C(node-token), C(agent-token)) were set aside."}, Returned: "with step=rejoin", Type: "list", Sample: []any{"/var/lib/rancher/k3s/server/tls.pre-restore-1764910000"}},
	},
}
