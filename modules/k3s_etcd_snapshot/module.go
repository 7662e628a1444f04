package k3setcdsnapshot

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

// module is k3s_etcd_snapshot.
var module = &ansible.Module{
	Name:             "k3s_etcd_snapshot",
	ShortDescription: "Take an etcd snapshot on a k3s server and list the kept ones",
	Description: []string{
		"Runs C(k3s etcd-snapshot save --name <name>) on a server whose k3s runs embedded etcd (C(cluster-init), or joined to such a server), then C(k3s etcd-snapshot ls), and returns the snapshot taken and every one k3s keeps.",
		"k3s names the file C(<name>-<node name>-<unix time>) and keeps it under the server's C(etcd-snapshot-dir) (by default C(/var/lib/rancher/k3s/server/db/snapshots), 0600 in a 0700 directory). k3s reads its config files for this as for the server, so the C(etcd-s3) settings given in role k8s_cluster's C(k8s_cluster_server_config) (or C(k3s_config)) apply to it too: with C(etcd-s3) on, k3s uploads the snapshot to the bucket as well.",
		"k3s's own message is the module's when it refuses (k3s not running, no embedded etcd: C(etcd database not found)); the values of C(token), C(agent-token) and the C(etcd-s3) credentials in k3s's config files are masked in everything the module returns.",
		"Always C(changed) (a snapshot is a new file); in check mode nothing is taken, and the kept ones are listed. A Go binary: the node needs no Python.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "none",
	Platforms: "linux",
	Examples: `
- name: Take a snapshot before a risky step
  gitops.k3s_flux.k3s_etcd_snapshot:
    name: pre-upgrade-v1.36.3-k3s1
  become: true
  register: snapshot

- name: Say where it is
  ansible.builtin.debug:
    msg: "{{ snapshot.snapshot.name }} at {{ snapshot.snapshot.location }}"
`,
	Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "name", Required: true, Description: []string{
			"k3s's C(--name) for the snapshot: lowercase letters, digits, C(-) and C(.), at most 100 characters (k3s appends C(-<node name>-<unix time>) and makes a file and a Kubernetes object name of it)."}},
	}},
	Returns: []ansible.Return{
		{Name: "snapshot", Description: []string{"The snapshot taken (not returned in check mode): its C(name), C(location) (C(file://<path>) on the node, or C(s3://...)), C(size) in bytes and C(created) (RFC 3339), as C(k3s etcd-snapshot ls) lists it."},
			Returned: "success, not in check mode", Type: "dict",
			Sample: map[string]any{"name": "pre-upgrade-v1.36.3-k3s1-node1-1764900000", "location": "file:///var/lib/rancher/k3s/server/db/snapshots/pre-upgrade-v1.36.3-k3s1-node1-1764900000", "size": 4321280, "created": "2026-12-05T04:00:00Z"}},
		{Name: "snapshots", Description: []string{"Every snapshot k3s keeps, as C(k3s etcd-snapshot ls) lists them (the node's, and with C(etcd-s3) on those in the bucket too, their C(location) C(s3://<bucket>/<key>): one taken with C(etcd-s3) is listed twice, at one time), oldest first. C(snapshot) is the node's copy."},
			Returned: "success", Type: "list",
			Sample: []any{map[string]any{"name": "etcd-snapshot-node1-1764892800", "location": "file:///var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-node1-1764892800", "size": 4300800, "created": "2026-12-05T00:00:00Z"}}},
	},
}
