package k3snodemodule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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
		"On a server whose datastore was bootstrapped already, a C(k3s_config.token) that is another secret than the one in C(<data_dir>/server/token) is refused before anything is written (k3s would refuse to start with it: \"bootstrap data already found and encrypted with different token\"); the message names C(k3s token rotate).",
		"On servers it then waits until the API's C(/readyz) answers C(ok) on this node, within the same deadline: asked where k3s wrote it listens into its admin kubeconfig (its C(bind-address), which k3s then listens on instead of the loopback, and its C(https-listen-port)), authenticated with that kubeconfig. Module gitops.k3s_flux.k3s_node_info reads the node token and that kubeconfig.",
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
			{Name: "k3s_config", Type: ansible.TypeDict, NoLogValues: ansible.NoLogValuesOf(k3sconfig.Module),
				Description: []string{"The arguments of module gitops.k3s_flux.k3s_config (C(role), C(token), C(server), C(config), ...). This module runs it first, in its own process, and restarts the unit when it says C(restart_needed); its result is returned under C(k3s_config) and its diff comes first.",
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
			{Name: "kubeconfig_path", Type: ansible.TypePath, Default: k3snode.DefaultPaths.Kubeconfig,
				Description: []string{"The admin kubeconfig a server writes (k3s C(write-kubeconfig)), whose credentials C(/readyz) is asked with."}},
			{Name: "proxy", Type: ansible.TypeDict,
				Description: []string{
					"The HTTP proxy the node goes through: the install script's download (fetched by the module, and by the script's curl), and k3s itself (its image pulls), as k3s documents: C(HTTP_PROXY), C(HTTPS_PROXY) and C(NO_PROXY) in the unit's environment file C(/etc/systemd/system/<unit>.service.env), which the install script writes (mode 0600, as it does) and this module keeps to these values afterwards, restarting k3s when they change; the file's other lines are left as they are.",
					"A password in a URL is masked in the task's output and diff. Not set: the environment file's proxy lines are left alone; set to an empty dict, they are removed.",
				},
				Options: []ansible.Option{
					{Name: "http_proxy", Description: []string{"The proxy for http URLs (C(HTTP_PROXY)), e.g. C(http://proxy.home.arpa:3128)."}},
					{Name: "https_proxy", Description: []string{"The proxy for https URLs (C(HTTPS_PROXY))."}},
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
`,
	Returns: []ansible.Return{
		{Name: "version", Description: []string{"The k3s version installed after the task (in check mode: that a real run would leave)."}, Returned: "always", Type: "str", Sample: "v1.36.2+k3s1"},
		{Name: "previous_version", Description: []string{"The k3s version found before the task; empty when there was none."}, Returned: "always", Type: "str", Sample: "v1.35.4+k3s1"},
		{Name: "upgrade_pending", Description: []string{"The node runs another, older version that C(upgrade=false) left in place."}, Returned: "always", Type: "bool", Sample: false},
		{Name: "newer_installed", Description: []string{"The node runs a newer version than C(version), left alone (no C(allow_downgrade))."}, Returned: "always", Type: "bool", Sample: false},
		{Name: "service", Description: []string{"The node's unit."}, Returned: "always", Type: "str", Sample: "k3s"},
		{Name: "actions", Description: []string{"What the task did (in check mode: would do), in order."}, Returned: "always", Type: "list", Sample: []any{"install k3s v1.36.2+k3s1 with the install script https://get.k3s.io"}},
		{Name: "restart_done", Description: []string{"Whether the unit was (re)started or installed, so k3s runs with its current config."}, Returned: "always", Type: "bool", Sample: true},
		{Name: "ready", Description: []string{"On servers: whether C(/readyz) answered C(ok)."}, Returned: "when role is server and wait is true", Type: "bool", Sample: true},
		{Name: "k3s_config", Description: []string{"The result of module gitops.k3s_flux.k3s_config (C(restart_needed), C(node_name), C(path), ...)."}, Returned: "when k3s_config is given", Type: "dict", Sample: map[string]any{"restart_needed": false, "node_name": "node1", "path": "/etc/rancher/k3s/config.yaml"}},
		{Name: "k3s_registries", Description: []string{"The result of module gitops.k3s_flux.k3s_registries."}, Returned: "when k3s_registries is given", Type: "dict", Sample: map[string]any{"restart_needed": false, "path": "/etc/rancher/k3s/registries.yaml"}},
		{Name: "airgap_transfer_needed", Description: []string{"Set when an airgap install is needed and the files are still on the controller; the action plugin then copies them and runs the module again."}, Returned: "when remote_src is false and an airgap install is needed", Type: "bool", Sample: true},
	},
}

const (
	formatK3sVersion ansible.Format = "a k3s release such as v1.36.2+k3s1"
	formatSHA256     ansible.Format = "64 hexadecimal digits (a sha256)"
)

func init() {
	ansible.RegisterFormat(formatK3sVersion, isK3sVersion)
	ansible.RegisterFormat(formatSHA256, isSHA256)
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
	State            string `json:"state"`
	Role             string `json:"role"`
	Version          string `json:"version"`
	InstallSource    string `json:"install_source"`
	InstallScriptURL string `json:"install_script_url"`
	InstallScriptSHA string `json:"install_script_sha256"`
	AirgapBinary     string `json:"airgap_binary"`
	AirgapBinarySHA  string `json:"airgap_binary_sha256"`
	AirgapScript     string `json:"airgap_script"`
	AirgapScriptSHA  string `json:"airgap_script_sha256"`
	AirgapImages     string `json:"airgap_images"`
	AirgapImagesSHA  string `json:"airgap_images_sha256"`
	RemoteSrc        bool   `json:"remote_src"`
	Restart          bool   `json:"restart"`
	Upgrade          bool   `json:"upgrade"`
	AllowDowngrade   bool   `json:"allow_downgrade"`
	APIPort          int    `json:"api_port"`
	Wait             bool   `json:"wait"`
	WaitTimeout      int    `json:"wait_timeout"`
	DataDir          string `json:"data_dir"`
	KubeconfigPath   string `json:"kubeconfig_path"`
	Proxy            *struct {
		HTTP    string   `json:"http_proxy"`
		HTTPS   string   `json:"https_proxy"`
		NoProxy []string `json:"no_proxy"`
	} `json:"proxy"`
}

// proxy is the proxy the arguments set, and whether they set one (even
// none: an empty dict).
func (a args) proxy() (k3snode.Proxy, bool) {
	if a.Proxy == nil {
		return k3snode.Proxy{}, false
	}
	return k3snode.Proxy{HTTP: a.Proxy.HTTP, HTTPS: a.Proxy.HTTPS, NoProxy: strings.Join(a.Proxy.NoProxy, ",")}, true
}

// state is what the node has now.
type state struct {
	Version string // "" when k3s is missing
	Unit    k3snode.UnitState
	Other   k3snode.UnitState // the unit of the other role
}

// plan is what the task will do, decided from the state alone.
type plan struct {
	Service, Other string
	StopOther      bool
	Install        bool
	UpgradePending bool // another, older version kept: upgrade is false
	NewerInstalled bool // a newer version kept: allow_downgrade is false
	Enable, Start  bool
	Restart        bool
}

func (p plan) changed() bool {
	return p.StopOther || p.Install || p.Enable || p.Start || p.Restart
}

func decide(a args, s state) (plan, error) {
	p := plan{Service: k3snode.Units[a.Role], Other: k3snode.Units[otherRole(a.Role)]}
	p.StopOther = s.Other.Loaded && (s.Other.Active || s.Other.Enabled)
	another := s.Version != "" && s.Version != a.Version
	newer := another && !a.AllowDowngrade && k3snode.Newer(s.Version, a.Version)
	switch {
	case newer && !s.Unit.Loaded:
		return p, fmt.Errorf("k3s %s on this node is newer than version %s and its unit %s is gone: set version to %s to repair it, or allow_downgrade to install %s", s.Version, a.Version, p.Service, s.Version, a.Version)
	case newer:
		p.NewerInstalled = true
	case another && !a.Upgrade && s.Unit.Loaded:
		p.UpgradePending = true
	default:
		p.Install = s.Version != a.Version || !s.Unit.Loaded
	}
	if !p.Install {
		p.Enable = !s.Unit.Enabled
		p.Start = !s.Unit.Active
		p.Restart = a.Restart && s.Unit.Active
	}
	return p, nil
}

func (p plan) actions(a args) []string {
	var out []string
	if p.StopOther {
		out = append(out, "stop and disable "+p.Other)
	}
	if p.Install {
		how := "the install script " + a.InstallScriptURL
		if a.InstallSource == "airgap" {
			how = "the airgap files"
		}
		out = append(out, fmt.Sprintf("install k3s %s as %s with %s", a.Version, p.Service, how))
	}
	if p.Enable {
		out = append(out, "enable "+p.Service)
	}
	if p.Start {
		out = append(out, "start "+p.Service)
	}
	if p.Restart {
		out = append(out, "restart "+p.Service+" for its new config")
	}
	return out
}

// describe is the diff's text of a node's k3s.
func describe(version, service string, unit k3snode.UnitState) string {
	if version == "" {
		version = "none"
	}
	return fmt.Sprintf("k3s: %s\n%s: %s\n", version, service, unit)
}

func otherRole(role string) string {
	if role == "server" {
		return "agent"
	}
	return "server"
}

func run(ctx context.Context, req *ansible.Request, sys k3snode.System, where k3snode.Paths) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	where.DataDir, where.Kubeconfig = a.DataDir, a.KubeconfigPath
	if a.State == "absent" {
		for _, r := range renderers {
			if req.Params[r.option] != nil {
				return nil, fmt.Errorf("%s: only with state present (state absent removes k3s's files)", r.option)
			}
		}
		return uninstall(ctx, req, sys, where)
	}
	if err := checkAirgapArgs(a); err != nil {
		return nil, err
	}
	if err := checkBootstrapToken(req, a, where); err != nil {
		return nil, err
	}
	n := node{sys: sys, where: where}
	s, err := n.read(ctx, a.Role)
	if err != nil {
		return nil, err
	}
	p, err := decide(a, s)
	if err != nil {
		return nil, err
	}
	// The action plugin runs the module again once the files are on the node:
	// nothing is rendered before then, so that run reports every change.
	transfer := p.Install && a.InstallSource == "airgap" && !a.RemoteSrc && !req.CheckMode
	var steps []step
	if !transfer {
		var failed *step
		if steps, failed = render(ctx, req); failed != nil {
			res := &ansible.Result{}
			addSteps(res, steps)
			return res, fmt.Errorf("%s: %w", failed.option, failed.Err)
		}
		if restartNeeded(steps) {
			a.Restart = true
			if p, err = decide(a, s); err != nil {
				return nil, err
			}
		}
	}
	envChange, err := n.envChange(req, a, p.Service)
	if err != nil {
		return nil, err
	}
	if envChange != nil && !p.Install {
		// systemd reads the file when the unit starts.
		a.Restart = true
		if p, err = decide(a, s); err != nil {
			return nil, err
		}
	}
	n.env = envChange
	res := planResult(req, a, s, p, envChange, steps)
	if req.CheckMode {
		return res, nil
	}
	if transfer {
		res.Changed = false
		res.Set("airgap_transfer_needed", true)
		return res, errors.New("k3s must be installed from airgap files that are still on the controller: run this module as a task (its action plugin copies them to the node), or set remote_src with paths on the node")
	}
	return res, n.apply(ctx, req, a, p, nodeNameOf(steps), res)
}

// planResult is the result of plan p for a node in state s: what changes,
// the versions before and after (in check mode: would be), and the diff of
// k3s, its rendered files and its environment file.
func planResult(req *ansible.Request, a args, s state, p plan, env *envChange, steps []step) *ansible.Result {
	after := s.Version
	if p.Install {
		after = a.Version
	}
	res := &ansible.Result{Changed: p.changed() || env != nil}
	res.Set("previous_version", s.Version)
	res.Set("version", after)
	res.Set("upgrade_pending", p.UpgradePending)
	res.Set("newer_installed", p.NewerInstalled)
	if p.NewerInstalled {
		req.Warn("k3s %s on this node is newer than version %s: left on it, not downgraded (allow_downgrade installs %s)", s.Version, a.Version, a.Version)
	}
	res.Set("service", p.Service)
	res.Set("actions", nonNil(p.actions(a)))
	res.Set("restart_done", false)
	if p.changed() {
		described := describe(after, p.Service, k3snode.UnitState{Loaded: true, Enabled: true, Active: true})
		if p.Restart {
			described = strings.TrimSuffix(described, "\n") + " (restarted for its new config)\n"
		}
		res.Diff = []ansible.Diff{{
			Before: describe(s.Version, p.Service, s.Unit), After: described,
			BeforeHeader: "k3s on this node", AfterHeader: "k3s on this node",
		}}
	}
	addSteps(res, steps)
	if env != nil {
		res.Diff = append(res.Diff, ansible.Diff{Before: env.Before, After: env.After, BeforeHeader: env.Path, AfterHeader: env.Path})
	}
	return res
}

// apply carries plan p out, then waits for the unit (when k3s was started)
// and, on a server asked to wait, for the API, within wait_timeout.
func (n node) apply(ctx context.Context, req *ansible.Request, a args, p plan, nodeName string, res *ansible.Result) error {
	// The journal from here on is this task's: what k3s says after the start.
	n.since = time.Now().Unix()
	if err := n.carryOut(ctx, req, a, p); err != nil {
		return err
	}
	started := p.Install || p.Start || p.Restart
	res.Set("restart_done", started)
	// One deadline for the unit and the API: wait_timeout.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(a.WaitTimeout)*time.Second)
	defer cancel()
	if started {
		if err := n.waitActive(ctx, req, p.Service, a.WaitTimeout, nodeName); err != nil {
			if a.Role == "server" && a.Wait {
				res.Set("ready", false)
			}
			return err
		}
	}
	if a.Role != "server" || !a.Wait {
		return nil
	}
	err := n.waitReady(ctx, req, a)
	res.Set("ready", err == nil)
	return err
}

// checkBootstrapToken refuses, before anything is written, a server token
// that k3s would refuse at its next start: another secret than the one the
// server's datastore was bootstrapped with.
func checkBootstrapToken(req *ansible.Request, a args, where k3snode.Paths) error {
	cfg, _ := req.Params["k3s_config"].(map[string]any)
	token, _ := cfg["token"].(string)
	if a.Role != "server" || token == "" {
		return nil
	}
	mismatch, err := k3snode.BootstrapTokenMismatch(where, token)
	if err != nil || !mismatch {
		return err
	}
	return fmt.Errorf("k3s_config.token is another secret than the one this server's datastore was bootstrapped with (%s): k3s would refuse to start (\"bootstrap data already found and encrypted with different token\"), so nothing was written. To change the cluster token, run `k3s token rotate --new-token <new>` on a server first, then set the new one; otherwise set the token back", k3snode.BootstrapTokenPath(where))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkAirgapArgs refuses airgap options that cannot be used together with
// the install source.
func checkAirgapArgs(a args) error {
	if a.InstallSource == "airgap" {
		return nil
	}
	for name, v := range map[string]string{"airgap_binary": a.AirgapBinary, "airgap_script": a.AirgapScript, "airgap_images": a.AirgapImages} {
		if v != "" {
			return fmt.Errorf("%s is set but install_source is %s: set install_source=airgap to install from airgap files", name, a.InstallSource)
		}
	}
	return nil
}

// node carries out the plan on the machine.
type node struct {
	sys   k3snode.System
	where k3snode.Paths
	since int64 // when this task started k3s, in seconds since the epoch: its journal's start
	// env is the unit's environment file as the task leaves it, nil when
	// the task leaves it alone.
	env *envChange
}

// read finds the installed version and the state of both units.
func (n node) read(ctx context.Context, role string) (s state, err error) {
	s.Version = k3snode.Version(ctx, n.sys, n.where)
	if s.Unit, err = k3snode.Unit(ctx, n.sys, k3snode.Units[role]); err != nil {
		return s, err
	}
	s.Other, err = k3snode.Unit(ctx, n.sys, k3snode.Units[otherRole(role)])
	return s, err
}

func (n node) systemctl(ctx context.Context, verb, unit string, flags ...string) error {
	args := append(append([]string{verb}, flags...), unit+".service")
	if out, err := n.sys.Run(ctx, nil, "systemctl", args...); err != nil {
		return fmt.Errorf("systemctl %s %s: %w: %s", verb, unit, err, k3snode.LastLines(out, 5))
	}
	return nil
}

func (n node) carryOut(ctx context.Context, req *ansible.Request, a args, p plan) error {
	if p.StopOther {
		if err := n.systemctl(ctx, "stop", p.Other); err != nil {
			return err
		}
		if err := n.systemctl(ctx, "disable", p.Other); err != nil {
			return err
		}
	}
	// Starts are queued (--no-block): k3s's units are Type=notify with
	// TimeoutStartSec=0, so a blocking start of a k3s that never gets ready
	// would never return; waitActive waits with a deadline instead.
	if p.Install {
		if err := n.install(ctx, req, a); err != nil {
			return err
		}
		if err := n.writeEnv(a); err != nil {
			return err
		}
		return n.systemctl(ctx, "restart", p.Service, "--no-block")
	}
	if err := n.writeEnv(a); err != nil {
		return err
	}
	if p.Enable {
		if err := n.systemctl(ctx, "enable", p.Service); err != nil {
			return err
		}
	}
	if p.Start {
		return n.systemctl(ctx, "start", p.Service, "--no-block")
	}
	if p.Restart {
		return n.systemctl(ctx, "restart", p.Service, "--no-block")
	}
	return nil
}

// crashLoopRestarts is how many automatic restarts during the wait make a
// crash loop: k3s exited that often since the task started it.
const crashLoopRestarts = 3

// waitActive waits until the unit is active (k3s said it is ready) or the
// deadline passes; a unit restarted crashLoopRestarts times meanwhile, or
// failed, fails at once, and so does a refusal that k3s would retry for
// ever but only the user can end (joinRefusal, read from the journal every
// journalEvery polls). The error names the unit's state, its restarts and
// the end of its journal.
func (n node) waitActive(ctx context.Context, req *ansible.Request, unit string, timeout int, nodeName string) error {
	first := -1
	for poll := 1; ; poll++ {
		u, err := k3snode.Unit(ctx, n.sys, unit)
		if err != nil {
			return err
		}
		if u.Active {
			return nil
		}
		if first < 0 || u.Restarts < first {
			first = u.Restarts
		}
		restarts := u.Restarts - first
		switch {
		case restarts >= crashLoopRestarts:
			return fmt.Errorf("%s is crash-looping: k3s exited and systemd restarted it %d times since this task started it (%s); %s", unit, restarts, u.String(), n.journal(ctx, unit))
		case u.ActiveState == "failed" || (u.ActiveState == "inactive" && restarts > 0):
			return fmt.Errorf("%s failed (%s); %s", unit, u.String(), n.journal(ctx, unit))
		case poll%journalEvery == 0:
			if journal, err := n.journalLines(ctx, unit, journalScan); err == nil {
				if refusal := joinRefusal(journal, nodeName); refusal != "" {
					return fmt.Errorf("%s cannot join (%s): %s; its journal ends: %s", unit, u.String(), refusal, k3snode.LastLines(journal, journalLines))
				}
			}
		}
		req.Progress("waiting for %s to report ready: %s, restarted %d times", unit, u.String(), restarts)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not report ready within %ds: %s, restarted %d times since this task started it; %s", unit, timeout, u.String(), restarts, n.journal(context.Background(), unit))
		case <-time.After(unitPollInterval):
		}
	}
}

// nodeNameOf is the node name k3s_config found (its node_name), or "".
func nodeNameOf(steps []step) string {
	for _, s := range steps {
		if s.option == "k3s_config" {
			return s.converged.NodeName
		}
	}
	return ""
}

// joinRefusal is what the user must do about a refusal in k3s's journal
// that k3s retries for ever and that does not end by itself; "" when
// there is none. A node password is refused (k3s's pkg/nodepassword) when
// the cluster has a Node of this name that joined with another password:
// the host was re-installed since (k3s keeps the password in
// /etc/rancher/node, which a new OS does not have), or another host has
// the name. k3s deletes the password Secret with the Node.
func joinRefusal(journal, nodeName string) string {
	// Refused at three tries in a row (k3s tries every 5 to 10 s), not
	// once: a Node deleted just before the run takes its Secret with it a
	// moment later (the garbage collector), and the next try joins.
	if strings.Count(journal, "Node password rejected") < refusalRepeats {
		return ""
	}
	name := nodeName
	if name == "" {
		name = "<this host's node name>"
	}
	return fmt.Sprintf("the server rejected this host's node password, so k3s would retry for ever. The cluster has a Node %[1]s that joined with another password: this host was re-installed since (k3s keeps the password in /etc/rancher/node/password), or another host has the name %[1]s. If the Node is this host's, delete it (`kubectl delete node %[1]s`: k3s deletes the Secret kube-system/%[1]s.node-password.k3s with it) and run again; if it is another host's, give this one its own name (node-name or with-node-id in the k3s config)", name)
}

// journalEvery is how many unit polls pass between two reads of the
// journal (2 s at unitPollInterval); journalScan is how much of it such a
// read looks through (k3s says it again every 5 s, among other lines), and
// journalLines how much of it a message quotes.
const (
	journalEvery   = 10
	journalScan    = 50
	journalLines   = 10
	refusalRepeats = 3
)

// How often a wait asks again: the unit's state is a local systemctl call,
// and most starts take well under a second; /readyz is an HTTPS request.
var (
	unitPollInterval = 200 * time.Millisecond
	pollInterval     = time.Second
)

// journal is the end of the unit's journal since this task started k3s,
// for a message: what k3s said last.
func (n node) journal(ctx context.Context, unit string) string {
	out, err := n.journalLines(ctx, unit, journalLines)
	if err != nil {
		return fmt.Sprintf("its journal could not be read (journalctl: %v)", err)
	}
	return "its journal ends: " + k3snode.LastLines(out, journalLines)
}

// journalLines reads the last lines of the unit's journal since this task
// started k3s.
func (n node) journalLines(ctx context.Context, unit string, lines int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return n.sys.Run(ctx, nil, "journalctl", "-u", unit+".service", "--since", fmt.Sprintf("@%d", n.since), "-n", strconv.Itoa(lines), "--no-pager", "-o", "cat")
}

// waitReady polls /readyz until it answers ok or the deadline (ctx,
// wait_timeout) passes.
func (n node) waitReady(ctx context.Context, req *ansible.Request, a args) error {
	for {
		err := n.sys.Readyz(ctx, n.where.Kubeconfig, a.APIPort)
		if err == nil {
			return nil
		}
		req.Progress("waiting for /readyz: %v", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("the k3s API on this node did not answer /readyz with ok within %ds: last: %w", a.WaitTimeout, err)
		case <-time.After(pollInterval):
		}
	}
}
