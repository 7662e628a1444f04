package k3snodemodule

import (
	"net/url"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

var module = &ansible.Module{
	Name:             "k3s_node",
	ShortDescription: "Install k3s on a node and keep its service enabled, active and answering",
	Description: []string{
		"Reads the installed k3s version (C(k3s --version), compared exactly) and the state of the node's unit (C(k3s) on servers, C(k3s-agent) on agents).",
		"Installs k3s when it is missing, another version, or its unit is gone: with the install script (downloaded by the module, checked against C(install_script_sha256) when given, then run) or from airgap files, each checked against its sha256 on the node before use.",
		"Otherwise enables and starts the unit when it is not, and restarts it only when C(restart) is true (pass k3s_config's C(restart_needed)). A host moved between servers and agents has the other unit stopped and disabled.",
		"Starts never block: k3s's units are C(Type=notify) with C(TimeoutStartSec=0), so a blocking C(systemctl start) of an agent that cannot join (the server unreachable, a wrong token, a rejected node password) would never return. The install script runs with C(INSTALL_K3S_SKIP_START=true) (which also makes sure k3s starts after an install the script would have found unchanged), then the module queues the start or restart (C(systemctl --no-block)) and waits, within O(wait_timeout), until the unit is active: k3s reported ready. A unit still C(activating) at the deadline fails the task with its state, its restart count and the last lines of its journal (C(journalctl -u)); a k3s that exits and is restarted by systemd 3 times meanwhile (a crash loop: C(activating (auto-restart))) fails it at once. A crash-looping unit is never taken for active. The journal is read every 2 s meanwhile: a node password the server rejected at three tries in a row (the cluster has a Node of this name that joined with another password, as after a host is re-installed; k3s retries for ever) fails the task then, naming the Node to delete or the names to give.",
		"On a server whose datastore was bootstrapped already, a C(k3s_config.token) that is another secret than the one in C(<data_dir>/server/token) is refused before anything is written (k3s would refuse to start with it: \"bootstrap data already found and encrypted with different token\"), unless O(token_rotation) says it is the cluster's new token; the message names C(playbooks/rotate_token.yml).",
		"On servers it then waits until the API's C(/readyz) answers C(ok) on this node, within the same deadline: asked where k3s wrote it listens into its admin kubeconfig (its C(bind-address), which k3s then listens on instead of the loopback, and its C(https-listen-port)), authenticated with that kubeconfig, and over a certificate that holds every C(tls-san) of k3s's config (C(/etc/rancher/k3s/config.yaml) and its drop-ins): after a restart that added one, k3s serves its old certificate for a moment, and a client naming the new name would be refused. Module gitops.k3s_flux.k3s_node_info reads the node token and that kubeconfig.",
		"A Go binary: the node needs no Python. Its action plugin copies airgap files to the node through the connection, only when an install is needed.",
	},
	Author:    []string{"gitops.k3s_flux maintainers (@gitops-k3s-flux)"},
	CheckMode: "full",
	DiffMode:  "full",
	Platforms: "linux",
	Notes: []string{
		"Runs as root (use C(become)): it installs into C(/usr/local/bin) and drives systemd.",
		"The install script is run with C(INSTALL_K3S_VERSION) and C(INSTALL_K3S_EXEC) (C(server) or C(agent)); the flags belong in k3s's config file (module gitops.k3s_flux.k3s_config), which the script leaves alone.",
	},
	Spec: ansible.Spec{
		Options: []ansible.Option{
			{Name: "state", Default: "present", Choices: []any{"present", "absent"},
				Description: []string{"C(absent) takes the node back to bare: k3s's own uninstall scripts (C(k3s-uninstall.sh) on servers, C(k3s-agent-uninstall.sh) on agents, whichever the node has), then C(/etc/rancher/k3s) (the directory of C(kubeconfig_path)) and C(data_dir) removed if anything is left. Only directories k3s makes are removed, those whose own name has C(k3s) in it: any other (C(/), a home directory such as C(/home/pi) or C(/root/.kube)) is refused naming the option, before anything changes. C(role) and C(version) are not needed then."}},
			{Name: "role", Choices: []any{"server", "agent"},
				Description: []string{"Whether this node runs C(k3s server) (unit C(k3s)) or C(k3s agent) (unit C(k3s-agent))."}},
			{Name: "version", Format: formatK3sVersion,
				Description: []string{"The k3s release to have, exactly, such as C(v1.36.2+k3s1)."}},
			{Name: "install_source", Default: "script", Choices: []any{"script", "airgap"},
				Description: []string{"C(script): download C(install_script_url) and run it, which downloads k3s. C(airgap): install the C(airgap_*) files."}},
			{Name: "install_script_url", Default: "https://get.k3s.io",
				Description: []string{"The k3s install script (get.k3s.io or a mirror of it)."}},
			{Name: "release_url", Format: formatReleaseURL,
				Description: []string{"Where the install script downloads k3s from instead of GitHub's releases (its C(GITHUB_URL), default C(https://github.com/k3s-io/k3s/releases)): a mirror serving C(<release_url>/download/<version>/k3s) (C(k3s-arm64), C(k3s-armhf)) and C(sha256sum-<arch>.txt) as GitHub does. Only with C(install_source=script). No credentials in it (the script prints the URLs it downloads)."}},
			{Name: "install_script_sha256", Format: formatSHA256,
				Description: []string{"sha256 of the install script; when set, a script with another sum is refused before it runs."}},
			{Name: "airgap_binary", Type: ansible.TypePath,
				Description: []string{"The k3s binary for the node's CPU, a path on the controller (on the node with C(remote_src)). Installed as C(/usr/local/bin/k3s)."}},
			{Name: "airgap_binary_sha256", Format: formatSHA256,
				Description: []string{"sha256 of C(airgap_binary), checked on the node before use."}},
			{Name: "airgap_script", Type: ansible.TypePath,
				Description: []string{"The k3s install script, a path on the controller (on the node with C(remote_src)), run with C(INSTALL_K3S_SKIP_DOWNLOAD=true)."}},
			{Name: "airgap_script_sha256", Format: formatSHA256,
				Description: []string{"sha256 of C(airgap_script), checked on the node before use."}},
			{Name: "airgap_images", Type: ansible.TypePath,
				Description: []string{"Optional image archive (C(k3s-airgap-images-<arch>.tar.zst)), copied to C(<data_dir>/agent/images/)."}},
			{Name: "airgap_images_sha256", Format: formatSHA256,
				Description: []string{"sha256 of C(airgap_images), checked on the node before use."}},
			{Name: "remote_src", Type: ansible.TypeBool, Default: false,
				Description: []string{"The C(airgap_*) paths are on the node already. When false, the action plugin copies them from the controller into the task's temporary directory, only when an install is needed."}},
			{Name: "upgrade", Type: ansible.TypeBool, Default: true,
				Description: []string{"Replace a k3s of another version now. When false, a node that runs another version keeps it (and its unit is enabled, started and restarted as usual) and the result says C(upgrade_pending): role k8s_cluster does this on every node first, then upgrades them one at a time, each drained first.",
					"A node without k3s, or whose unit is gone, is installed at C(version) either way."}},
			{Name: "allow_downgrade", Type: ansible.TypeBool, Default: false,
				Description: []string{"Install C(version) also on a node that runs a newer k3s (upgraded by system-upgrade-controller, say). When false, such a node is left on its version with a warning, and C(newer_installed) says so."}},
			{Name: "restart", Type: ansible.TypeBool, Default: false,
				Description: []string{"Restart the unit, because its config changed (k3s_config's C(restart_needed)). Not done when an install just started it."}},
			{Name: "rotate_certificates", Type: ansible.TypeBool, Default: false,
				Description: []string{"Rotate k3s's certificates on the node the way k3s documents it: stop the unit, C(k3s certificate rotate) (k3s copies the certificates it removes to C(<data_dir>/server/tls-<time>) on a server, C(<data_dir>/agent/tls-<time>) on an agent), start the unit, and wait as after a restart. k3s makes new ones, signed by the same certificate authorities, as it starts: a server its own (and the admin kubeconfig C(kubeconfig_path) with a new client certificate), an agent asks a server for its. The certificate authorities are left alone.",
					"Only on a node where k3s runs already (an install makes new certificates anyway), and with O(rotate_within_days), only when one is due. Instead of, not as well as, a restart or a start."}},
			{Name: "rotate_within_days", Type: ansible.TypeInt, Default: 0,
				Description: []string{"With O(rotate_certificates): rotate only when the first of the node's certificates to expire, other than a certificate authority's, expires within this many days (or has expired), so that a second run changes nothing. 0 rotates whatever their expiry."}},
			{Name: "token_rotation", Choices: []any{"rotate", "follow"},
				Description: []string{"On a server, C(k3s_config.token) is the cluster's new token, and a datastore bootstrapped with another is not refused. Nothing is done where C(<data_dir>/server/token) holds that token already, so that a second run changes nothing.",
					"C(rotate): this server rotates the cluster token, as C(k3s token rotate --new-token) does it (the same request to k3s's supervisor, C(PUT /v1-k3s/token) as user C(server) with the current token read from C(<data_dir>/server/token), over a connection that trusts only the cluster's server CA; no token on a command line): k3s re-encrypts its bootstrap data with the new token and writes it into C(server/token). Then the config is written and k3s restarted with it, and waited for. k3s must be running here. Done on one server, first.",
					"C(follow): the token was rotated on another server, O(rotated_on): before anything is written, that server must accept the new token (a request to its supervisor, C(GET /v1-k3s/encrypt/status), which answers only the cluster's current token), else the task fails and nothing changes (k3s would refuse to start: \"bootstrap data already found and encrypted with different token\"). Then the config is written and k3s restarted with it, one server at a time.",
					"Agents have no datastore: the option is refused on an agent, whose config takes the new token as any other change (and restarts it). Check mode asks no server."}},
			{Name: "secrets_encryption", Choices: []any{"enable", "follow"},
				Description: []string{"On a server whose C(k3s_config) turns C(secrets-encryption) on: turn it on for a cluster that runs without it, as k3s documents it for one (k3s C(secrets-encrypt enable) on one server, then every server restarted with C(secrets-encryption)); then O(encryption_keys) makes the first key. A new cluster needs neither: k3s makes its key as it starts with C(secrets-encryption).",
					"C(enable): where the server has no encryption config (C(<data_dir>/server/cred/encryption-config.json)), this server's k3s enables it before the config is written (C(PUT /v1-k3s/encrypt/config) to its supervisor as C(k3s secrets-encrypt enable) sends it, with the cluster secret read from C(<data_dir>/server/token)): k3s writes an encryption config with the identity provider alone and keeps it in the datastore for the other servers. Then the config is written and k3s restarted with it. k3s must be running here. Done on one server, first.",
					"C(follow): before anything is written, the server O(rotated_on) must have enabled it (its status, C(GET /v1-k3s/encrypt/status)), else the task fails and nothing changes: k3s here would make a key of its own (k3s issue 7195). Then the config is written and k3s restarted with it, one server at a time, taking the encryption config from the datastore.",
					"Without it, a server whose config turns C(secrets-encryption) on for a running cluster without an encryption config is refused. Whatever the options, a server whose encryption config has a key and whose config does not turn C(secrets-encryption) on is refused before anything is written: k3s started without it could not read its Secrets."}},
			{Name: "encryption_keys", Choices: []any{"rotate", "ensure", "follow"},
				Description: []string{"On a server whose C(k3s_config) turns C(secrets-encryption) on, once every server runs with it: the secrets encryption keys, as C(k3s secrets-encrypt rotate-keys) makes them (C(PUT /v1-k3s/encrypt/config) with stage C(rotate_keys) to this server's supervisor: k3s adds a new key, makes it the active one, writes every Secret again with it and removes the old one). The task then waits, within O(wait_timeout), until k3s's status says C(reencrypt_finished) with the new key. k3s refuses unless every server is on the same encryption config; so does this task, before asking.",
					"C(rotate): rotate them now (each run: a new key). C(ensure): only where no key was ever made (the identity provider alone, what O(secrets_encryption) leaves), so that a second run changes nothing. Both on one server, first, with k3s running.",
					"C(follow): on each other server, one at a time: when its active key is not the one of the server O(rotated_on), restart k3s, which takes the cluster's encryption config from the datastore as it starts, and wait until its status names that key. Nothing is done where the keys are the same.",
					"Key names (C(AES-CBC aescbckey-<time>)) are returned, never a key."}},
			{Name: "rotated_on", Format: formatServerURL,
				Description: []string{"With C(token_rotation=follow): the server the token was rotated on; with C(secrets_encryption=follow) or C(encryption_keys=follow), the server that enabled secrets encryption or rotated its keys; as C(https://host:port). Default C(k3s_config.server); name the server itself where that is a load balancer or a virtual address, which may lead to a server not restarted yet."}},
			{Name: "k3s_config", Type: ansible.TypeDict, NoLogValues: ansible.NoLogValuesOf(k3sconfig.Module),
				Description: []string{"The arguments of module gitops.k3s_flux.k3s_config (C(role), C(token), C(server), C(config), ...). This module runs it first, in its own process, and restarts the unit when it says C(restart_needed); its result is returned under C(k3s_config) and its diff comes first. It is checked before anything is written: when it (or C(k3s_registries)) would fail, nothing is written and k3s is left alone.",
					"One task and one command on the node instead of two for every node and every run: role k8s_cluster renders the config this way. Its secrets are masked as module k3s_config masks them.",
					"Not run when an airgap install needs the files from the controller: the action plugin copies them, then runs this module again."}},
			{Name: "k3s_registries", Type: ansible.TypeDict, NoLogValues: ansible.NoLogValuesOf(k3sconfig.RegistriesModule),
				Description: []string{"The arguments of module gitops.k3s_flux.k3s_registries (C(mirrors), C(configs), ...), run the same way after C(k3s_config); its result is returned under C(k3s_registries)."}},
			{Name: "api_port", Type: ansible.TypeInt, Default: 6443, Positive: true,
				Description: []string{"The port the server's API listens on (k3s C(https-listen-port)), for C(/readyz) when k3s's kubeconfig names no server."}},
			{Name: "wait", Type: ansible.TypeBool, Default: true,
				Description: []string{"On servers, wait until C(/readyz) answers C(ok) on this node (after the unit is active, which the module always waits for when it started k3s)."}},
			{Name: "wait_timeout", Type: ansible.TypeInt, Default: 300, Positive: true,
				Description: []string{"Seconds to wait, in all, for the unit it started to be active and, with O(wait), for C(/readyz)."}},
			{Name: "data_dir", Type: ansible.TypePath, Default: k3snode.DefaultPaths.DataDir,
				Description: []string{"k3s's data directory (k3s C(data-dir)); the airgap images go under it."}},
			{Name: "abandon_restore", Type: ansible.TypeBool, Default: false,
				Description: []string{"Start k3s on a server where a failed etcd restore left its mark (module k3s_etcd_restore's C(<data_dir>/server/db/gitops.k3s_flux-restore-pending)), and remove the mark. When false, such a server is refused before anything changes, in check mode too, naming the mark and quoting what the restore said: k3s would run on what is left of the etcd data, and a first controller with C(cluster-init) would start a new, empty cluster."}},
			{Name: "kubeconfig_path", Type: ansible.TypePath, Default: k3snode.DefaultPaths.Kubeconfig,
				Description: []string{"The admin kubeconfig a server writes (k3s C(write-kubeconfig)), whose credentials C(/readyz) is asked with."}},
			{Name: "proxy", Type: ansible.TypeDict,
				Description: []string{
					"The HTTP proxy the node goes through: the install script's download (fetched by the module, and by the script's curl), and k3s itself (its image pulls), as k3s documents: C(HTTP_PROXY), C(HTTPS_PROXY) and C(NO_PROXY) in the unit's environment file C(/etc/systemd/system/<unit>.service.env), which the install script writes (mode 0600, as it does) and this module keeps to these values afterwards, restarting k3s when they change; the file's other lines are left as they are.",
					"A password in a URL is masked in the task's output, diff and errors, also when the task fails, in every form: as written, percent-decoded and percent-encoded (a password holding C(@ : / # %) must be written encoded, C(http://user:s3cr%40t@proxy.home.arpa:3128)). Not set: the environment file's proxy lines are left alone; set to an empty dict, they are removed.",
				},
				Options: []ansible.Option{
					{Name: "http_proxy", NoLogValues: urlPasswords, Description: []string{"The proxy for http URLs (C(HTTP_PROXY)), e.g. C(http://proxy.home.arpa:3128)."}},
					{Name: "https_proxy", NoLogValues: urlPasswords, Description: []string{"The proxy for https URLs (C(HTTPS_PROXY))."}},
					{Name: "no_proxy", Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{},
						Description: []string{"Hosts, domains (C(.home.arpa)) and CIDRs reached directly (C(NO_PROXY)). Role k8s_cluster adds the cluster and service CIDRs, C(.svc), C(.cluster.local), C(localhost), C(127.0.0.1) and every node's address."}},
				}},
		},
		RequiredIf: []ansible.RequiredIf{
			{Key: "state", Value: "present", Requirements: []string{"role", "version"}},
			{Key: "install_source", Value: "airgap", Requirements: []string{"airgap_binary", "airgap_binary_sha256", "airgap_script", "airgap_script_sha256"}},
		},
		RequiredTogether: [][]string{{"airgap_images", "airgap_images_sha256"}},
	},
	Examples: `
- name: Install k3s on a server, restarting it when its config changed
  gitops.k3s_flux.k3s_node:
    role: server
    version: v1.36.2+k3s1
    restart: "{{ k3s_config.restart_needed }}"
  become: true

- name: Install an agent from airgap files kept on the controller
  gitops.k3s_flux.k3s_node:
    role: agent
    version: v1.36.2+k3s1
    install_source: airgap
    airgap_binary: files/k3s-arm64
    airgap_binary_sha256: "{{ k3s_arm64_sha256 }}"
    airgap_script: files/install.sh
    airgap_script_sha256: "{{ k3s_script_sha256 }}"
  become: true

- name: Rotate k3s's certificates when the first expires within 90 days, one node at a time
  gitops.k3s_flux.k3s_node:
    role: server
    version: v1.36.2+k3s1
    upgrade: false
    rotate_certificates: true
    rotate_within_days: 90
  become: true
  throttle: 1

# The cluster token rotated: on the first server, then on each other one (throttle 1),
# then the agents' config takes the new token as any other change.
- name: Rotate the cluster token on the first server
  gitops.k3s_flux.k3s_node:
    role: server
    version: v1.36.2+k3s1
    token_rotation: rotate
    k3s_config:
      role: server
      token: "{{ vault_k3s_new_token }}"
  become: true
  when: inventory_hostname == groups['k3s_servers'][0]

- name: Restart the other servers with the new token, one at a time
  gitops.k3s_flux.k3s_node:
    role: server
    version: v1.36.2+k3s1
    token_rotation: follow
    rotated_on: https://{{ groups['k3s_servers'][0] }}:6443
    k3s_config:
      role: server
      token: "{{ vault_k3s_new_token }}"
      server: https://k3s-api.home.arpa:6443
  become: true
  throttle: 1
  when: inventory_hostname in groups['k3s_servers'][1:]
`,
	Returns: []ansible.Return{
		{Name: "version", Description: []string{"The k3s version installed after the task (in check mode: that a real run would leave)."}, Returned: "always", Type: "str", Sample: "v1.36.2+k3s1"},
		{Name: "previous_version", Description: []string{"The k3s version found before the task; empty when there was none."}, Returned: "always", Type: "str", Sample: "v1.35.4+k3s1"},
		{Name: "upgrade_pending", Description: []string{"The node runs another, older version that C(upgrade=false) left in place."}, Returned: "always", Type: "bool", Sample: false},
		{Name: "newer_installed", Description: []string{"The node runs a newer version than C(version), left alone (no C(allow_downgrade))."}, Returned: "always", Type: "bool", Sample: false},
		{Name: "service", Description: []string{"The node's unit."}, Returned: "always", Type: "str", Sample: "k3s"},
		{Name: "actions", Description: []string{"What the task did (in check mode: would do), in order."}, Returned: "always", Type: "list", Sample: []any{"install k3s v1.36.2+k3s1 with the install script https://get.k3s.io"}},
		{Name: "restart_done", Description: []string{"Whether the unit was (re)started or installed, so k3s runs with its current config."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "certificates_rotated", Description: []string{"Whether the node's certificates were rotated (in check mode: would be)."}, Returned: "when rotate_certificates is true", Type: "bool", Sample: true},
		{Name: "certificates_backup", Description: []string{"Where k3s copied the certificates it rotated."}, Returned: "when the certificates were rotated", Type: "str", Sample: "/var/lib/rancher/k3s/server/tls-1798761600"},
		{Name: "encryption_enabled", Description: []string{"Whether this server's k3s enabled secrets encryption for the running cluster (O(secrets_encryption=enable)); in check mode: would have."}, Returned: "when secrets_encryption is given", Type: "bool", Sample: true},
		{Name: "encryption_keys_rotated", Description: []string{"Whether the secrets encryption keys were rotated on this server (O(encryption_keys)); in check mode: would be."}, Returned: "when encryption_keys is given", Type: "bool", Sample: true},
		{Name: "encryption_key", Description: []string{"The name of the secrets encryption key Secrets are written with on this server, from k3s's status, after the task (in check mode and where k3s is not running: before it); empty where there is none. A name, never a key."}, Returned: "when encryption_keys is given", Type: "str", Sample: "AES-CBC aescbckey-2026-12-07T05:00:00Z"},
		{Name: "token_rotated", Description: []string{"Whether k3s was restarted with the cluster's new token (O(token_rotation)): on the server that rotated it (C(rotate)), or one that followed (C(follow)); in check mode: would be."}, Returned: "when token_rotation is given", Type: "bool", Sample: true},
		{Name: "ready", Description: []string{"On servers: whether C(/readyz) answered C(ok) over a certificate holding the config's C(tls-san)."}, Returned: "when role is server and wait is true", Type: "bool", Sample: true},
		{Name: "k3s_config", Description: []string{"The result of module gitops.k3s_flux.k3s_config (C(restart_needed), C(node_name), C(path), ...)."}, Returned: "when k3s_config is given", Type: "dict", Sample: map[string]any{"restart_needed": false, "node_name": "node1", "path": "/etc/rancher/k3s/config.yaml"}},
		{Name: "k3s_registries", Description: []string{"The result of module gitops.k3s_flux.k3s_registries."}, Returned: "when k3s_registries is given", Type: "dict", Sample: map[string]any{"restart_needed": false, "path": "/etc/rancher/k3s/registries.yaml"}},
		{Name: "airgap_transfer_needed", Description: []string{"Set when an airgap install is needed and the files are still on the controller; the action plugin then copies them and runs the module again."}, Returned: "when remote_src is false and an airgap install is needed", Type: "bool", Sample: true},
	},
}

const (
	formatK3sVersion ansible.Format = "a k3s release such as v1.36.2+k3s1"
	formatSHA256     ansible.Format = "64 hexadecimal digits (a sha256)"
	formatReleaseURL ansible.Format = "an http or https URL without credentials"
	formatServerURL  ansible.Format = "an https URL such as https://10.0.0.1:6443"
)

func init() {
	ansible.RegisterFormat(formatK3sVersion, isK3sVersion)
	ansible.RegisterFormat(formatSHA256, isSHA256)
	ansible.RegisterFormat(formatReleaseURL, isReleaseURL)
	ansible.RegisterFormat(formatServerURL, isServerURL)
}

func isReleaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && u.Fragment == ""
}

func isServerURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil && u.RawQuery == "" && u.Fragment == ""
}

// isK3sVersion accepts v<major>.<minor>.<patch>[-rc<n>]+k3s<n>: what
// install.sh installs by INSTALL_K3S_VERSION (a dev build is not one).
func isK3sVersion(s string) bool {
	r, ok := k3snode.ParseRelease(s)
	return ok && !r.Dev()
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

type args struct {
	State             string `json:"state"`
	Role              string `json:"role"`
	Version           string `json:"version"`
	InstallSource     string `json:"install_source"`
	InstallScriptURL  string `json:"install_script_url"`
	InstallScriptSHA  string `json:"install_script_sha256"`
	ReleaseURL        string `json:"release_url"`
	AirgapBinary      string `json:"airgap_binary"`
	AirgapBinarySHA   string `json:"airgap_binary_sha256"`
	AirgapScript      string `json:"airgap_script"`
	AirgapScriptSHA   string `json:"airgap_script_sha256"`
	AirgapImages      string `json:"airgap_images"`
	AirgapImagesSHA   string `json:"airgap_images_sha256"`
	RemoteSrc         bool   `json:"remote_src"`
	Restart           bool   `json:"restart"`
	RotateCerts       bool   `json:"rotate_certificates"`
	RotateWithinDays  int    `json:"rotate_within_days"`
	TokenRotation     string `json:"token_rotation"`
	SecretsEncryption string `json:"secrets_encryption"`
	EncryptionKeys    string `json:"encryption_keys"`
	RotatedOn         string `json:"rotated_on"`
	Upgrade           bool   `json:"upgrade"`
	AllowDowngrade    bool   `json:"allow_downgrade"`
	APIPort           int    `json:"api_port"`
	Wait              bool   `json:"wait"`
	WaitTimeout       int    `json:"wait_timeout"`
	DataDir           string `json:"data_dir"`
	AbandonRestore    bool   `json:"abandon_restore"`
	KubeconfigPath    string `json:"kubeconfig_path"`
	Proxy             *struct {
		HTTP    string   `json:"http_proxy"`
		HTTPS   string   `json:"https_proxy"`
		NoProxy []string `json:"no_proxy"`
	} `json:"proxy"`
}

// urlPasswords are the password forms of a proxy URL option's raw value,
// masked from the start: a failure before run reports the options too.
func urlPasswords(v any) []string {
	s, _ := v.(string)
	return ansible.URLPasswords(s)
}

// proxy is the proxy the arguments set, and whether they set one (even
// none: an empty dict).
func (a args) proxy() (k3snode.Proxy, bool) {
	if a.Proxy == nil {
		return k3snode.Proxy{}, false
	}
	return k3snode.Proxy{HTTP: a.Proxy.HTTP, HTTPS: a.Proxy.HTTPS, NoProxy: strings.Join(a.Proxy.NoProxy, ",")}, true
}
