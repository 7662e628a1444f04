package k3snodemodule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// state is what the node has now.
type state struct {
	Version string // "" when k3s is missing
	Unit    k3snode.UnitState
	Other   k3snode.UnitState // the unit of the other role
	// Certs are k3s's certificates on the node, earliest to expire first,
	// read at Now: only for rotate_certificates.
	Certs []k3snode.Certificate
	Now   time.Time
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
	// Rotate: stop, k3s certificate rotate, start (instead of Start or
	// Restart); RotateWhy says which certificate made it due.
	Rotate    bool
	RotateWhy string
	// Token is what the task does about the cluster token (tokenChange):
	// "", "rotate" or "follow"; TokenFrom is the server it follows.
	Token, TokenFrom string
	// Encryption is what it does about secrets encryption (planEncryption).
	Encryption encryptionWork
}

func (p plan) changed() bool {
	return p.StopOther || p.Install || p.Enable || p.Start || p.Restart || p.Rotate || p.Encryption.Enable || p.Encryption.Keys == "rotate"
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
		p.Rotate, p.RotateWhy = rotation(a, s)
		p.Start = !s.Unit.Active && !p.Rotate
		p.Restart = a.Restart && s.Unit.Active && !p.Rotate
	}
	return p, nil
}

// rotation says whether the node's certificates are rotated, and why: asked
// to, on a node with certificates (k3s ran), and with rotate_within_days,
// when the first to expire that is not a certificate authority's (which
// k3s certificate rotate leaves alone) expires within that many days.
func rotation(a args, s state) (bool, string) {
	if !a.RotateCerts {
		return false, ""
	}
	for _, c := range s.Certs {
		if c.CA {
			continue
		}
		left := k3snode.DaysLeft(c.NotAfter, s.Now)
		if a.RotateWithinDays > 0 && left >= a.RotateWithinDays {
			return false, ""
		}
		when := fmt.Sprintf("expires on %s, in %d days", c.NotAfter.UTC().Format("2006-01-02"), left)
		if left < 0 {
			when = fmt.Sprintf("expired on %s", c.NotAfter.UTC().Format("2006-01-02"))
		}
		return true, fmt.Sprintf("the first to expire, %q (%s), %s", c.Subject, c.Path, when)
	}
	return false, ""
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
	switch p.Token {
	case "rotate":
		out = append(out, "rotate the cluster token on this server (PUT "+k3snode.TokenRotatePath+", as k3s token rotate does)")
	case "follow":
		out = append(out, "take the cluster's new token, rotated on "+p.TokenFrom)
	}
	if p.Encryption.Enable {
		out = append(out, "enable secrets encryption on this server (PUT "+k3snode.EncryptionConfigPath+", as k3s secrets-encrypt enable does)")
	}
	if p.Start {
		out = append(out, "start "+p.Service)
	}
	if p.Restart {
		out = append(out, "restart "+p.Service+" for its new config")
	}
	if p.Rotate {
		out = append(out, fmt.Sprintf("rotate k3s's certificates (%s): stop %s, k3s certificate rotate, start %s", p.RotateWhy, p.Service, p.Service))
	}
	switch p.Encryption.Keys {
	case "rotate":
		out = append(out, "rotate the secrets encryption keys on this server (PUT "+k3snode.EncryptionConfigPath+", as k3s secrets-encrypt rotate-keys does) and wait until every Secret is written with the new key")
	case "restart":
		out = append(out, "take the cluster's new secrets encryption key, made on "+p.Encryption.Lead+", from the datastore as k3s restarts")
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
		return absent(ctx, req, sys, where)
	}
	if err := checkPresentArgs(a); err != nil {
		return nil, err
	}
	token, err := readTokens(req, a, where)
	if err != nil {
		return nil, err
	}
	said, markErr := os.ReadFile(k3snode.RestoreMark(where.DataDir))
	abandoned, err := restoreRefusal(a.Role, k3snode.RestoreMark(where.DataDir), string(said), !errors.Is(markErr, fs.ErrNotExist), a.AbandonRestore)
	if err != nil {
		return nil, err
	}
	n := node{sys: sys, where: where, patience: time.Duration(a.WaitTimeout) * time.Second}
	s, err := n.read(ctx, a)
	if err != nil {
		return nil, err
	}
	// Everything is decided before anything is written: the renderers run
	// in check mode first (a config they would change restarts k3s), then
	// the environment file's change (systemd reads it when the unit starts).
	planned, failed := render(ctx, req, true)
	if failed != nil {
		return stepsFailed(planned, failed)
	}
	envChange, err := n.envChange(req, a, k3snode.Units[a.Role])
	if err != nil {
		return nil, err
	}
	change, enc, err := n.clusterChanges(ctx, req, a, s, token)
	if err != nil {
		return nil, err
	}
	// k3s takes a new cluster token, or the cluster's encryption key, only as it starts.
	a.Restart = a.Restart || restartNeeded(planned) || envChange != nil || change != "" || enc.Keys == "restart"
	p, err := decide(a, s)
	if err != nil {
		return nil, err
	}
	p.Token, p.TokenFrom, p.Encryption = change, token.server, enc
	n.env = envChange
	if req.CheckMode {
		return planResult(req, a, s, p, envChange, planned), nil
	}
	if p.Install && a.InstallSource == "airgap" && !a.RemoteSrc {
		// The action plugin runs the module again once the files are on the
		// node: nothing is written before then, so that run reports every change.
		res := planResult(req, a, s, p, envChange, nil)
		res.Changed = false
		res.Set("airgap_transfer_needed", true)
		return res, errors.New("k3s must be installed from airgap files that are still on the controller: run this module as a task (its action plugin copies them to the node), or set remote_src with paths on the node")
	}
	// Before anything is written: a config with the new token that k3s
	// would refuse, or with secrets encryption that would make a key of its
	// own, is never left behind.
	if err := n.beforeWrite(ctx, a, p, token); err != nil {
		return nil, err
	}
	steps, failed := render(ctx, req, false)
	if failed != nil {
		return stepsFailed(steps, failed)
	}
	res := planResult(req, a, s, p, envChange, steps)
	err = n.apply(ctx, req, a, p, nodeNameOf(steps), res)
	if err == nil && abandoned != "" {
		err = dropRestoreMark(req, where, abandoned)
	}
	return res, err
}

// absent takes the node back to bare; the renderers' options have no place there.
func absent(ctx context.Context, req *ansible.Request, sys k3snode.System, where k3snode.Paths) (*ansible.Result, error) {
	for _, r := range renderers {
		if req.Params[r.option] != nil {
			return nil, fmt.Errorf("%s: only with state present (state absent removes k3s's files)", r.option)
		}
	}
	return uninstall(ctx, req, sys, where)
}

// checkPresentArgs refuses arguments of state present that cannot work together.
func checkPresentArgs(a args) error {
	if err := checkAirgapArgs(a); err != nil {
		return err
	}
	if a.RotateWithinDays < 0 {
		return fmt.Errorf("rotate_within_days is %d: expected 0 (rotate whatever the expiry) or a number of days", a.RotateWithinDays)
	}
	return nil
}

// stepsFailed is the task's failure when a renderer failed: the renderers'
// results so far, and the failed one's error under its option's name.
func stepsFailed(steps []step, failed *step) (*ansible.Result, error) {
	res := &ansible.Result{}
	addSteps(res, steps)
	return res, fmt.Errorf("%s: %w", failed.option, failed.Err)
}

// dropRestoreMark removes the mark of a restore the user abandoned, once k3s runs.
func dropRestoreMark(req *ansible.Request, where k3snode.Paths, warning string) error {
	req.Warn("%s", warning)
	if err := os.Remove(k3snode.RestoreMark(where.DataDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the restore mark: %w", err)
	}
	return nil
}

// restoreRefusal refuses to start k3s on a server where a failed etcd
// restore left its mark (k3s_etcd_restore), quoting what the restore said:
// k3s moved the etcd data aside, and the first controller's cluster-init
// would start a new, empty cluster. abandon_restore makes it a warning.
func restoreRefusal(role, mark, said string, present, abandon bool) (warning string, err error) {
	if !present || role != "server" {
		return "", nil
	}
	words := strings.TrimSpace(said)
	if first, rest, _ := strings.Cut(words, "\n"); strings.HasPrefix(first, "restore started") {
		words = strings.TrimSpace(rest) // when the first failed restore began: k3s_etcd_restore's
	}
	if abandon {
		return fmt.Sprintf("abandon_restore: k3s starts although an etcd restore failed on this server (%s, removed now); what it said: %s", mark, words), nil
	}
	msg := fmt.Sprintf("%s is there: an etcd restore failed on this server, and k3s started now would run on what is left of its etcd data (with cluster-init, a new, empty cluster). "+
		"Finish the restore (playbooks/restore.yml) or roll back as it said, then remove %s; or set abandon_restore (-e k8s_cluster_restore_abandon=true) to start k3s anyway", mark, mark)
	if words != "" {
		msg += ". The restore said: " + words
	}
	return "", errors.New(msg + "; nothing was changed")
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
	if a.RotateCerts {
		res.Set("certificates_rotated", p.Rotate)
	}
	if a.TokenRotation != "" {
		res.Set("token_rotated", p.Token != "")
	}
	if a.SecretsEncryption != "" {
		res.Set("encryption_enabled", p.Encryption.Enable)
	}
	if a.EncryptionKeys != "" {
		res.Set("encryption_keys_rotated", p.Encryption.Keys == "rotate")
		res.Set("encryption_key", p.Encryption.status.ActiveKey)
	}
	if p.changed() {
		described := describe(after, p.Service, k3snode.UnitState{Loaded: true, Enabled: true, Active: true})
		if p.Restart {
			described = strings.TrimSuffix(described, "\n") + " (restarted for its new config)\n"
		}
		if p.Rotate {
			described = strings.TrimSuffix(described, "\n") + " (restarted with new certificates: " + p.RotateWhy + ")\n"
		}
		switch p.Encryption.Keys {
		case "rotate":
			described = strings.TrimSuffix(described, "\n") + " (secrets encryption keys rotated here)\n"
		case "restart":
			described = strings.TrimSuffix(described, "\n") + " (restarted for the cluster's new secrets encryption key, made on " + p.Encryption.Lead + ")\n"
		}
		switch p.Token {
		case "rotate":
			described = strings.TrimSuffix(described, "\n") + " (with the cluster's new token, rotated here)\n"
		case "follow":
			described = strings.TrimSuffix(described, "\n") + " (with the cluster's new token, rotated on " + p.TokenFrom + ")\n"
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
	if err := n.carryOut(ctx, req, a, p, res); err != nil {
		return err
	}
	started := p.Install || p.Start || p.Restart || p.Rotate
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
		return n.encryptionAfter(ctx, a, p.Encryption, res)
	}
	err := n.waitReady(ctx, req, a)
	res.Set("ready", err == nil)
	if err != nil {
		return err
	}
	return n.encryptionAfter(ctx, a, p.Encryption, res)
}

// tokens are the cluster tokens a server task deals with: the one its
// k3s_config gives (as ClusterSecret takes it), the one its datastore was
// bootstrapped with (stored, "" when none), and the server its config
// joins. Secrets: never in a message or a result.
type tokens struct {
	given, stored, server string
}

func readTokens(req *ansible.Request, a args, where k3snode.Paths) (tokens, error) {
	cfg, _ := req.Params["k3s_config"].(map[string]any)
	given, _ := cfg["token"].(string)
	server, _ := cfg["server"].(string)
	if a.RotatedOn != "" {
		server = a.RotatedOn
	}
	t := tokens{given: k3snode.ClusterSecret(given), server: server}
	if a.Role != "server" || given == "" {
		return t, nil
	}
	var err error
	t.stored, err = k3snode.StoredClusterSecret(where)
	return t, err
}

// tokenChange decides what a task does about the cluster token: "" when
// nothing, else token_rotation's "rotate" or "follow", on a server whose
// datastore was bootstrapped with another token than k3s_config's. Such a
// token without token_rotation is refused before anything is written: k3s
// would refuse to start with it ("bootstrap data already found and
// encrypted with different token", pkg/cluster/storage.go,
// getBootstrapKeyFromStorage).
func tokenChange(a args, t tokens, active bool) (string, error) {
	if a.TokenRotation != "" {
		switch {
		case a.Role != "server":
			return "", fmt.Errorf("token_rotation is %s but role is %s: only a server's datastore holds the cluster token; an agent's config takes the new token as any other change", a.TokenRotation, a.Role)
		case t.given == "":
			return "", fmt.Errorf("token_rotation is %s: k3s_config.token must be the cluster's new token", a.TokenRotation)
		case a.TokenRotation == "follow" && t.server == "":
			return "", errors.New("token_rotation is follow: rotated_on (or k3s_config.server) must name the server the token was rotated on")
		}
	}
	if a.Role != "server" || t.given == "" || t.stored == "" || t.stored == t.given {
		return "", nil
	}
	if a.TokenRotation == "" {
		return "", errors.New("k3s_config.token is another secret than the one this server's datastore was bootstrapped with (" + k3snode.BootstrapTokenPath(k3snode.Paths{DataDir: a.DataDir}) + "): k3s would refuse to start (\"bootstrap data already found and encrypted with different token\"), so nothing was written. To change the cluster token, rotate it (playbooks/rotate_token.yml with the new one in k8s_cluster_new_token, or this module's token_rotation); if it was rotated, give the new one; otherwise give the one it was bootstrapped with")
	}
	if a.TokenRotation == "rotate" && !active {
		return "", errors.New("token_rotation is rotate: k3s is not running on this server, and the token is rotated through its supervisor: start k3s first (with the token it has); nothing was changed")
	}
	return a.TokenRotation, nil
}

// clusterChanges decides what the task does about the cluster token
// (tokenChange) and about secrets encryption (planEncryption).
func (n node) clusterChanges(ctx context.Context, req *ansible.Request, a args, s state, t tokens) (string, encryptionWork, error) {
	change, err := tokenChange(a, t, s.Unit.Active)
	if err != nil {
		return "", encryptionWork{}, err
	}
	enc, err := n.planEncryption(ctx, req, a, s)
	return change, enc, err
}

// beforeWrite carries out what must come before the config is written: the
// token's change (changeToken), then secrets encryption's
// (encryptionBefore).
func (n node) beforeWrite(ctx context.Context, a args, p plan, t tokens) error {
	if err := n.changeToken(ctx, a, p, t); err != nil {
		return err
	}
	return n.encryptionBefore(ctx, a, p.Encryption)
}

// changeToken carries the token's change out before the config is written:
// "rotate" has this server's k3s rotate it, as k3s token rotate does
// (pkg/cli/token/token.go, Rotate: PUT /v1-k3s/token as user "server" with
// the current token); "follow" makes sure the server it was rotated on
// accepts the new token, or k3s here would refuse to start with it.
func (n node) changeToken(ctx context.Context, a args, p plan, t tokens) error {
	ca := k3snode.ServerCAPath(n.where)
	switch p.Token {
	case "rotate":
		base := k3snode.LocalAPI(n.where.Kubeconfig, a.APIPort)
		status, said, err := n.sys.Supervisor(ctx, http.MethodPut, base, k3snode.TokenRotatePath, ca, t.stored, k3snode.RotateTokenBody(t.given))
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("k3s answered %d: %s", status, said)
		}
		if err != nil {
			return fmt.Errorf("rotate the cluster token on this server: %w; nothing was written", err)
		}
	case "follow":
		status, said, err := n.sys.Supervisor(ctx, http.MethodGet, t.server, k3snode.TokenCheckPath, ca, t.given, nil)
		switch {
		case err != nil:
			return fmt.Errorf("token_rotation is follow: ask %s whether it accepts the new token: %w; nothing was written", t.server, err)
		case status == http.StatusUnauthorized:
			return fmt.Errorf("token_rotation is follow: %s does not accept the new token (401): rotate it there first (token_rotation=rotate); k3s here would refuse to start with it, so nothing was written", t.server)
		case status != http.StatusOK:
			return fmt.Errorf("token_rotation is follow: %s answered %d: %s; nothing was written", t.server, status, said)
		}
	}
	return nil
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
	// patience is how long a k3s that has just started may answer its
	// encryption status with an error (encryptionStatus): wait_timeout.
	patience time.Duration
}

// read finds the installed version, the state of both units and, for
// rotate_certificates, k3s's certificates.
func (n node) read(ctx context.Context, a args) (s state, err error) {
	s.Version = k3snode.Version(ctx, n.sys, n.where)
	if s.Unit, err = k3snode.Unit(ctx, n.sys, k3snode.Units[a.Role]); err != nil {
		return s, err
	}
	if s.Other, err = k3snode.Unit(ctx, n.sys, k3snode.Units[otherRole(a.Role)]); err != nil {
		return s, err
	}
	if a.RotateCerts {
		s.Certs, err = k3snode.Certificates(n.where)
		s.Now = time.Now()
	}
	return s, err
}

func (n node) systemctl(ctx context.Context, verb, unit string, flags ...string) error {
	args := append(append([]string{verb}, flags...), unit+".service")
	if out, err := n.sys.Run(ctx, nil, "systemctl", args...); err != nil {
		return fmt.Errorf("systemctl %s %s: %w: %s", verb, unit, err, k3snode.LastLines(out, 5))
	}
	return nil
}

func (n node) carryOut(ctx context.Context, req *ansible.Request, a args, p plan, res *ansible.Result) error {
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
	if p.Rotate {
		return n.rotate(ctx, p.Service, res)
	}
	if p.Start {
		return n.systemctl(ctx, "start", p.Service, "--no-block")
	}
	if p.Restart {
		return n.systemctl(ctx, "restart", p.Service, "--no-block")
	}
	return nil
}

// rotate stops the unit, has k3s rotate its certificates (pkg/cli/cert,
// rotate: it copies the certificates to a backup directory it names, then
// removes them) and queues the unit's start, as a start is, also when the
// rotation failed: k3s makes whatever certificate is missing as it starts.
func (n node) rotate(ctx context.Context, unit string, res *ansible.Result) error {
	if err := n.systemctl(ctx, "stop", unit); err != nil {
		return err
	}
	out, err := n.sys.Run(ctx, nil, filepath.Join(n.where.BinDir, "k3s"), "certificate", "rotate", "--data-dir", n.where.DataDir)
	if err == nil {
		res.Set("certificates_backup", certificateBackup(out))
	}
	if serr := n.systemctl(ctx, "start", unit, "--no-block"); serr != nil {
		if err != nil {
			return fmt.Errorf("k3s certificate rotate: %w: %s; and then %w", err, k3snode.LastLines(out, 5), serr)
		}
		return serr
	}
	if err != nil {
		return fmt.Errorf("k3s certificate rotate: %w: %s (%s was started again: k3s makes the certificates it lacks as it starts)", err, k3snode.LastLines(out, 5), unit)
	}
	return nil
}

// backedUp is how k3s certificate rotate names its backup (pkg/cli/cert,
// rotate): "Successfully backed up certificates to <dir>, please restart
// k3s server or agent to rotate certificates".
var backedUp = regexp.MustCompile(`backed up certificates to (\S+?), please`)

// certificateBackup is the backup directory k3s certificate rotate named in
// its output, "" when it named none.
func certificateBackup(out string) string {
	if m := backedUp.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
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
	first, restarts := -1, 0
	var last k3snode.UnitState
	for poll := 1; ; poll++ {
		u, err := k3snode.Unit(ctx, n.sys, unit)
		if err != nil && ctx.Err() != nil {
			// The deadline passed while systemctl answered (it was killed):
			// the wait timed out, with the state read last.
			return n.notReady(unit, timeout, last, restarts)
		}
		if err != nil {
			return err
		}
		if u.Active {
			return nil
		}
		if first < 0 || u.Restarts < first {
			first = u.Restarts
		}
		restarts, last = u.Restarts-first, u
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
			return n.notReady(unit, timeout, u, restarts)
		case <-time.After(unitPollInterval):
		}
	}
}

// notReady is the wait's timeout: the unit's state as last read, its
// restarts and the end of its journal.
func (n node) notReady(unit string, timeout int, u k3snode.UnitState, restarts int) error {
	return fmt.Errorf("%s did not report ready within %ds: %s, restarted %d times since this task started it; %s", unit, timeout, u.String(), restarts, n.journal(context.Background(), unit))
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

// configPath is k3s's config file, read with its drop-ins.
var configPath = k3sconfig.DefaultPath

// waitReady polls /readyz until it answers ok over a certificate that holds
// the config's tls-san, or the deadline (ctx, wait_timeout) passes.
func (n node) waitReady(ctx context.Context, req *ansible.Request, a args) error {
	// Ready is also serving a certificate that holds the config's tls-san: after a restart
	// that added one, k3s serves its old certificate for a moment (the dynamiclistener's
	// k3s-serving Secret catches up), and a client naming the new name would be refused.
	sans := k3sconfig.FileList(configPath, "tls-san")
	for {
		err := n.sys.Readyz(ctx, n.where.Kubeconfig, a.APIPort, sans)
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
