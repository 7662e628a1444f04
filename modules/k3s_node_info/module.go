package k3snodeinfo

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

var module = &ansible.Module{
	Name:             "k3s_node_info",
	ShortDescription: "Read k3s on a node: its version, its units, and on a server the node token and admin kubeconfig",
	Description: []string{
		"Reads the installed k3s version and the state of the C(k3s) and C(k3s-agent) units. Changes nothing.",
		"On a server, returns the node token the other nodes join with, and the admin kubeconfig k3s wrote, when asked for; failing to read either fails the task, naming the file.",
		"A Go binary: the node needs no Python.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "none",
	Platforms: "linux",
	Notes: []string{
		"C(token) and C(kubeconfig) are secrets: the action plugin prints a result that holds either censored, as C(no_log: true) would, while the registered variable keeps both. A failed read returns neither, so its message is shown. Both files are readable by root only: use C(become).",
	},
	Spec: ansible.Spec{
		Options: []ansible.Option{
			{Name: "return_token", Type: ansible.TypeBool, Default: false,
				Description: []string{"Return the node token, C(<data_dir>/server/node-token)."}},
			{Name: "return_kubeconfig", Type: ansible.TypeBool, Default: false,
				Description: []string{"Return the content of C(kubeconfig_path)."}},
			{Name: "data_dir", Type: ansible.TypePath, Default: k3snode.DefaultPaths.DataDir,
				Description: []string{"k3s's data directory (k3s C(data-dir))."}},
			{Name: "kubeconfig_path", Type: ansible.TypePath, Default: k3snode.DefaultPaths.Kubeconfig,
				Description: []string{"The admin kubeconfig a server writes (k3s C(write-kubeconfig))."}},
			{Name: "node_name", Default: "",
				Description: []string{"The C(node-name) the node's k3s config will set; empty: none. Only read to compute the returned C(node_name)."}},
			{Name: "with_node_id", Type: ansible.TypeBool, Default: false,
				Description: []string{"The node's k3s config will set C(with-node-id). Only read to compute the returned C(node_name)."}},
			{Name: "certificate_warning_days", Type: ansible.TypeInt, Default: 0,
				Description: []string{
					"Read k3s's certificates on the node (every C(*.crt) under C(<data_dir>/server/tls) and C(<data_dir>/agent), each certificate of a chain, and the client certificate of C(kubeconfig_path)) and warn when the earliest expires within this many days, or has expired, saying when and how to renew it: k3s renews a server's certificates when it starts within 120 days of their expiry, an agent's at every start. Returned as C(certificates). 0: not read.",
					"A file there that holds no certificate fails the task, naming it.",
				}},
			{Name: "preflight", Type: ansible.TypeDict,
				Description: []string{
					"Check, changing nothing, that the host is ready for k3s as this role: the memory cgroup controller (cgroup v2 or v1); the kernel modules C(overlay), C(br_netfilter) and, for flannel's vxlan backend, C(vxlan), each loaded, built in or loadable; a sysctl file that turns IPv4 forwarding off (a warning: k3s turns it on when it starts, a later C(sysctl --system) off again); swap (a warning); the tools k3s's install script needs (systemd or OpenRC, curl or wget unless airgap, sha256sum); free space under C(data_dir) (an error under 1 GiB, a warning under 4 GiB); the ports k3s listens on (the API port and 10250, and 2379-2380 with embedded etcd) not taken by another process; with ufw or firewalld active, what k3s needs from the other nodes and from the pod and service networks let in (as module k3s_firewall opens it; the fix lists the commands); the node's clock within 5 seconds of the Ansible controller's (certificates and etcd need agreeing clocks: the action plugin compares them, the time the module took counted in the node's favour).",
					"Each finding names what was seen and the fix (for a Raspberry Pi, the C(cmdline.txt) to edit and the words to add). Returned as C(preflight). Not set: no check.",
				},
				Options: []ansible.Option{
					{Name: "mode", Default: "strict", Choices: []any{"strict", "warn"},
						Description: []string{"C(strict) fails the task on any error finding, listing them all; C(warn) reports every finding as a warning."}},
					{Name: "role", Required: true, Choices: []any{"server", "agent"}, Description: []string{"What k3s will run as on the host."}},
					{Name: "etcd", Type: ansible.TypeBool, Default: false, Description: []string{"A server with embedded etcd: its ports 2379 and 2380 are checked too."}},
					{Name: "flannel_backend", Default: "vxlan", Description: []string{"k3s's C(flannel-backend): C(vxlan) needs the C(vxlan) module."}},
					{Name: "install_source", Default: "script", Choices: []any{"script", "airgap"}, Description: []string{"How k3s is installed: C(airgap) needs no download tool."}},
					{Name: "api_port", Type: ansible.TypeInt, Default: 6443, Positive: true, Description: []string{"k3s's C(https-listen-port), checked on a server."}},
					{Name: "cluster_cidr", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{"10.42.0.0/16"},
						Description: []string{"The pod networks (k3s's C(cluster-cidr)), which an active ufw or firewalld must let in."}},
					{Name: "service_cidr", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{"10.43.0.0/16"},
						Description: []string{"The service networks (k3s's C(service-cidr)), which an active ufw or firewalld must let in."}},
					{Name: "embedded_registry", Type: ansible.TypeBool, Default: false, Description: []string{"k3s's C(embedded-registry) is on: an active firewall must let in 5001/TCP too."}},
					{Name: "firewall_opened", Type: ansible.TypeBool, Default: false,
						Description: []string{"What an active ufw or firewalld does not let in is opened next (module k3s_firewall, as role k8s_cluster does unless C(k8s_cluster_firewall) is false): a closed port is then a warning."}},
					{Name: "reboot_pending", Type: ansible.TypeBool, Default: false, Description: []string{"The host's kernel command line was prepared for the memory cgroup (module k3s_prepare) and the host reboots before k3s is installed, as role k8s_cluster does: a missing memory cgroup is then a warning. For a C(--check) run, where the reboot is not made."}},
				}},
		},
	},
	Examples: `
- name: Read the first server's token and kubeconfig
  gitops.k3s_flux.k3s_node_info:
    return_token: true
    return_kubeconfig: true
  become: true
  register: k3s_first
`,
	Returns: []ansible.Return{
		{Name: "version", Description: []string{"The installed k3s version; empty when there is none."}, Returned: "always", Type: "str", Sample: "v1.36.2+k3s1"},
		{Name: "hostname", Description: []string{"The host name in lower case: the name k3s registers the node under when its config sets no C(node-name)."}, Returned: "always", Type: "str", Sample: "node1"},
		{Name: "node_name", Description: []string{"The name k3s will register the node under, as module k3s_config computes it: C(node_name), else the host name, in lower case; with C(with_node_id), followed by C(-) and C(node_id). Empty when C(with_node_id) is set and k3s has not made that id yet (before its first start): the name is then unique but not known."}, Returned: "always", Type: "str", Sample: "node1"},
		{Name: "node_id", Description: []string{"The suffix k3s adds to the node name, after C(-), when its config sets C(with-node-id): the content of C(/etc/rancher/node/id), which k3s makes at its first start with that flag. Empty when there is none."}, Returned: "always", Type: "str", Sample: "5a1b2c3d"},
		{Name: "server", Description: []string{"The C(server) k3s's config (C(/etc/rancher/k3s/config.yaml) and its C(config.yaml.d) drop-ins) points the node at: the server it joined. Empty on a first server (C(cluster-init)) and where k3s has no config."}, Returned: "always", Type: "str", Sample: "https://192.168.1.11:6443"},
		{Name: "units", Description: []string{"The state of each k3s unit: C(loaded), C(enabled), C(active) (k3s runs and reported ready; a unit still starting or waiting to be restarted is not), systemd's C(active_state) and C(sub_state) (C(activating)/C(auto-restart) is a k3s that keeps exiting), and C(restarts) (systemd's NRestarts)."}, Returned: "always", Type: "dict",
			Sample: map[string]any{"k3s": map[string]any{"loaded": true, "enabled": true, "active": true, "active_state": "active", "sub_state": "running", "restarts": 0},
				"k3s-agent": map[string]any{"loaded": false, "enabled": false, "active": false, "active_state": "inactive", "sub_state": "dead", "restarts": 0}}},
		{Name: "token", Description: []string{"The node token. A secret."}, Returned: "when return_token is true", Type: "str", Sample: "K10<sha256>::server:<secret>"},
		{Name: "kubeconfig", Description: []string{"The admin kubeconfig's content. A secret."}, Returned: "when return_kubeconfig is true", Type: "str", Sample: "apiVersion: v1\nclusters: ..."},
		{Name: "certificates", Description: []string{"k3s's certificates on the node: C(count), how many were read, and C(earliest), the one that expires first: its C(path), C(subject) (common name), C(not_after) (RFC 3339, UTC) and C(days_left) (whole days, negative once expired). Without k3s, C(count) 0 and no C(earliest)."}, Returned: "when certificate_warning_days is above 0", Type: "dict",
			Sample: map[string]any{"count": 31, "earliest": map[string]any{"path": "/var/lib/rancher/k3s/server/tls/client-admin.crt", "subject": "system:admin", "not_after": "2027-12-06T10:00:00Z", "days_left": 364}}},
		{Name: "node_time", Description: []string{"The node's clock when the checks ran, in seconds since the epoch: the action plugin compares it with the controller's (the C(clock) finding)."}, Returned: "when preflight is set", Type: "float", Sample: 1796428800.25},
		{Name: "firewall", Description: []string{"The active host firewall, C(ufw), C(firewalld) or C(none), as module k3s_firewall reads it."}, Returned: "when preflight is set", Type: "str", Sample: "none"},
		{Name: "preflight", Description: []string{"What the host lacks for k3s: each finding's C(check), C(severity) (C(error): k3s would not work; C(warning)), what was C(seen) and the C(fix); the C(clock) finding also its C(round_trip), the seconds the read took, by which the node's real offset may exceed the one seen. Empty when the host is ready."}, Returned: "when preflight is set", Type: "list",
			Sample: []any{map[string]any{"check": "memory cgroup", "severity": "error", "seen": "cgroup v2 without the memory controller (/sys/fs/cgroup/cgroup.controllers: cpuset cpu io pids)", "fix": "add \"cgroup_memory=1 cgroup_enable=memory\" at the end of the single line in /boot/firmware/cmdline.txt, then reboot"}}},
	},
}

type args struct {
	ReturnToken      bool           `json:"return_token"`
	ReturnKubeconfig bool           `json:"return_kubeconfig"`
	DataDir          string         `json:"data_dir"`
	KubeconfigPath   string         `json:"kubeconfig_path"`
	NodeName         string         `json:"node_name"`
	WithNodeID       bool           `json:"with_node_id"`
	CertWarningDays  int            `json:"certificate_warning_days"`
	Preflight        *preflightArgs `json:"preflight"`
}

type preflightArgs struct {
	Mode           string `json:"mode"`
	Role           string `json:"role"`
	Etcd           bool   `json:"etcd"`
	FlannelBackend string `json:"flannel_backend"`
	InstallSource  string `json:"install_source"`
	APIPort        int    `json:"api_port"`
	RebootPending  bool   `json:"reboot_pending"`
	// The host firewall's part.
	ClusterCIDR      []string `json:"cluster_cidr"`
	ServiceCIDR      []string `json:"service_cidr"`
	EmbeddedRegistry bool     `json:"embedded_registry"`
	FirewallOpened   bool     `json:"firewall_opened"`
}
