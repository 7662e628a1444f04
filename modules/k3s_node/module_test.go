package k3snodemodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

const (
	testVersion = "v1.36.2+k3s1"
	testToken   = "K10cafe::server:node-token-secret-4242"
	testScript  = "#!/bin/sh\necho installing\n"
)

// fakeNode stands in for a node's k3s, systemd and network: the install
// script installs testVersion's unit for the INSTALL_K3S_EXEC role.
type fakeNode struct {
	version    string
	units      map[string]*k3snode.UnitState
	commands   []string
	readyAfter int // /readyz calls that fail first
	readyCalls int
	readySANs  []string // what the last /readyz call required of the certificate
	installErr error
	script     []byte
	// neverReady units start and stay activating (an agent that cannot
	// join); crashLooping units exit and are restarted again and again.
	neverReady, crashLooping map[string]bool
	restarts                 map[string]int
	journal                  string   // what journalctl answers
	lastEnv                  []string // the install script's extra environment
	// certs are the certificate files k3s certificate rotate replaces;
	// rotateErr makes it fail.
	certs     []string
	rotateErr error
	// showsAnswered is how many `systemctl show` calls answer before the
	// next blocks until its context ends and is killed, as exec.CommandContext
	// kills a systemctl that has not answered by the deadline (0: never).
	showsAnswered, shows int
	// clusterSecret is the token password k3s's supervisors accept;
	// tokenFile is where a rotation writes the new token (server/token);
	// supervisorErr is an answer other than k3s's own (500).
	clusterSecret, tokenFile string
	supervisorStatus         int
	// enc is k3s's secrets encryption on this server and its lead
	// (encryption_test.go); nil: never asked.
	enc *fakeEncryption
}

func newFakeNode() *fakeNode {
	return &fakeNode{units: map[string]*k3snode.UnitState{}, script: []byte(testScript),
		neverReady: map[string]bool{}, crashLooping: map[string]bool{}, restarts: map[string]int{},
		journal: "Starting k3s agent\nFailed to validate connection to cluster at https://10.0.0.1:6443: failed to get CA certs: connect: no route to host\n"}
}

func (f *fakeNode) Run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	line := strings.TrimSpace(name + " " + strings.Join(args, " "))
	if filepath.Base(name) == "k3s" {
		if f.version == "" {
			return "", &os.PathError{Op: "fork/exec", Path: name, Err: os.ErrNotExist}
		}
		if len(args) > 1 && args[0] == "certificate" {
			f.commands = append(f.commands, "k3s "+strings.Join(args, " "))
			return f.rotate(args)
		}
		return fmt.Sprintf("k3s version %s (abc123)\ngo version go1.26\n", f.version), nil
	}
	f.commands = append(f.commands, line)
	switch name {
	case "systemctl":
		unit := strings.TrimSuffix(args[len(args)-1], ".service")
		u := f.units[unit]
		if args[0] == "show" {
			if f.shows++; f.showsAnswered > 0 && f.shows > f.showsAnswered {
				<-ctx.Done()
				return "", errors.New("signal: killed")
			}
			if u == nil {
				return "LoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\nNRestarts=0\n", nil
			}
			state := map[bool]string{true: "active running", false: "inactive dead"}[u.Active]
			if u.ActiveState == "activating" {
				state = "activating " + u.SubState
				if f.crashLooping[unit] {
					f.restarts[unit]++ // another exit and restart since the last look
				}
			}
			active, sub, _ := strings.Cut(state, " ")
			return fmt.Sprintf("LoadState=loaded\nActiveState=%s\nSubState=%s\nUnitFileState=%s\nNRestarts=%d\n", active, sub, map[bool]string{true: "enabled", false: "disabled"}[u.Enabled], f.restarts[unit]), nil
		}
		if u == nil {
			return "Unit " + unit + ".service not found.", errors.New("exit status 5")
		}
		switch args[0] {
		case "enable":
			u.Enabled = true
		case "disable":
			u.Enabled = false
		case "start", "restart":
			if !slices.Contains(args, "--no-block") {
				return "", fmt.Errorf("a blocking %s never returns for a k3s that does not get ready", line)
			}
			if f.enc != nil {
				f.enc.started()
			}
			switch {
			case f.neverReady[unit]:
				u.Active, u.ActiveState, u.SubState = false, "activating", "start"
			case f.crashLooping[unit]:
				u.Active, u.ActiveState, u.SubState = false, "activating", "auto-restart"
			default:
				u.Active, u.ActiveState, u.SubState = true, "active", "running"
			}
		case "stop":
			u.Active, u.ActiveState, u.SubState = false, "inactive", "dead"
		}
		return "", nil
	case "journalctl":
		// Only what k3s said since this task started it.
		if i := slices.Index(args, "--since"); i < 0 || !regexp.MustCompile(`^@\d+$`).MatchString(args[i+1]) {
			return "", fmt.Errorf("journalctl without --since @<start>: %s", line)
		}
		return f.journal, nil
	case "sh":
		if len(args) == 1 && strings.HasSuffix(args[0], "-uninstall.sh") {
			// k3s's uninstall script: stops and removes k3s (rm -f $BIN_DIR/k3s), and itself.
			f.version = ""
			f.units = map[string]*k3snode.UnitState{}
			if err := os.Remove(filepath.Join(filepath.Dir(args[0]), "k3s")); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			return "[INFO] removed", os.Remove(args[0])
		}
		if f.installErr != nil {
			return "[ERROR] Download failed", f.installErr
		}
		f.lastEnv = env
		vars := map[string]string{}
		for _, e := range env {
			k, v, _ := strings.Cut(e, "=")
			vars[k] = v
		}
		unit := "k3s"
		if vars["INSTALL_K3S_EXEC"] == "agent" {
			unit = "k3s-agent"
		}
		f.version = vars["INSTALL_K3S_VERSION"]
		// The script's own start blocks (TimeoutStartSec=0): the module must skip it.
		if vars["INSTALL_K3S_SKIP_START"] != "true" {
			return "", errors.New("the install script's start blocks for a k3s that does not get ready: INSTALL_K3S_SKIP_START=true expected")
		}
		f.units[unit] = &k3snode.UnitState{Loaded: true, Enabled: true}
		return "[INFO] done", nil
	}
	return "", fmt.Errorf("unexpected command %s", line)
}

// rotate is k3s certificate rotate --data-dir DIR: refused while k3s runs
// (k3s itself does not check, but a running k3s keeps serving what it
// removed); otherwise the certificates under f.certs are replaced by ones
// valid a year, as k3s makes them at its next start.
func (f *fakeNode) rotate(args []string) (string, error) {
	if len(args) != 4 || args[1] != "rotate" || args[2] != "--data-dir" {
		return "", fmt.Errorf("unexpected k3s %s", strings.Join(args, " "))
	}
	for unit, u := range f.units {
		if u.Active {
			return "", fmt.Errorf("rotated under a running %s", unit)
		}
	}
	if f.rotateErr != nil {
		return `level=fatal msg="Error: copy certificates: no space left on device"`, f.rotateErr
	}
	for _, path := range f.certs {
		raw, err := pki.SelfSigned("rotated", time.Now().AddDate(1, 0, 0))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return "", err
		}
	}
	backup := filepath.Join(args[3], "server", "tls-1798761600")
	return `level=info msg="Server detected, rotating agent and server certificates"` + "\n" +
		`level=info msg="Successfully backed up certificates to ` + backup + `, please restart k3s server or agent to rotate certificates"` + "\n", nil
}

func (f *fakeNode) Download(_ context.Context, url string, _ k3snode.Proxy) ([]byte, error) {
	f.commands = append(f.commands, "download "+url)
	return f.script, nil
}

func (f *fakeNode) Readyz(_ context.Context, _ string, _ int, sans []string) error {
	f.readyCalls++
	f.readySANs = sans
	if f.readyCalls <= f.readyAfter {
		return errors.New("connection refused")
	}
	return nil
}

// Supervisor stands in for k3s's supervisor (pkg/server/handlers): nothing
// answers on this node where k3s does not run; a request with another
// secret than the cluster's is refused (401); PUT /v1-k3s/token re-keys the
// cluster and writes server/token as tokenRotate does.
func (f *fakeNode) Supervisor(_ context.Context, method, base, path, _ string, secret string, body []byte) (int, string, error) {
	f.commands = append(f.commands, method+" "+base+path)
	local := strings.Contains(base, "127.0.0.1")
	if u := f.units["k3s"]; local && (u == nil || !u.Active) {
		return 0, "", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}
	if f.supervisorStatus != 0 {
		return f.supervisorStatus, "etcd: request timed out", nil
	}
	if secret != f.clusterSecret {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	switch {
	case method == http.MethodPut && path == k3snode.TokenRotatePath:
		var rotate struct {
			NewToken string `json:"newToken"`
		}
		if err := json.Unmarshal(body, &rotate); err != nil || rotate.NewToken == "" {
			return http.StatusBadRequest, "no newToken", nil
		}
		f.clusterSecret = rotate.NewToken
		return http.StatusOK, "", os.WriteFile(f.tokenFile, []byte("K10cafe::server:"+rotate.NewToken+"\n"), 0o600)
	case f.enc != nil && path == k3snode.EncryptionStatusPath && method == http.MethodGet:
		return f.enc.status(local)
	case f.enc != nil && path == k3snode.EncryptionConfigPath && method == http.MethodPut:
		return f.enc.change(body)
	case method == http.MethodGet && path == k3snode.TokenCheckPath:
		return http.StatusOK, "", nil
	}
	return http.StatusNotFound, "404 page not found", nil
}

// changes are the commands that change the node (not the reads).
func (f *fakeNode) changes() []string {
	var out []string
	for _, c := range f.commands {
		if !strings.HasPrefix(c, "systemctl show") {
			out = append(out, c)
		}
	}
	return out
}

func testPaths(t *testing.T) k3snode.Paths {
	dir := t.TempDir()
	// k3s's own layout under dir: state=absent removes only directories shaped so.
	p := k3snode.Paths{BinDir: filepath.Join(dir, "bin"), DataDir: filepath.Join(dir, "var", "lib", "rancher", "k3s"), Kubeconfig: filepath.Join(dir, "etc", "rancher", "k3s", "k3s.yaml"), UnitDir: filepath.Join(dir, "etc", "systemd", "system")}
	// k3s's config under dir too, not the machine's.
	configPath = filepath.Join(dir, "etc", "rancher", "k3s", "config.yaml")
	t.Cleanup(func() { configPath = k3sconfig.DefaultPath })
	require.NoError(t, os.MkdirAll(filepath.Join(p.DataDir, "server"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Dir(p.Kubeconfig), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(p.DataDir, "server", "node-token"), []byte(testToken+"\n"), 0o600))
	require.NoError(t, os.WriteFile(p.Kubeconfig, []byte("apiVersion: v1\n"), 0o600))
	return p
}

func runOn(t *testing.T, f *fakeNode, where k3snode.Paths, args map[string]any) (map[string]any, int) {
	t.Helper()
	full := map[string]any{"version": testVersion, "data_dir": where.DataDir, "kubeconfig_path": where.Kubeconfig, "wait_timeout": 5}
	for k, v := range args {
		full[k] = v
	}
	res, code, raw := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		return run(ctx, req, f, where)
	}, full)
	assert.NotContains(t, strings.ReplaceAll(raw, `"token":"`+testToken+`"`, ""), testToken, "the token only as the token value")
	assert.NotContains(t, raw, testRegistryPassword)
	assert.NotContains(t, raw, "c2VjcmV0LWNsaWVudC1rZXk=", "the registry client key")
	return res, code
}

func TestConverge(t *testing.T) {
	for _, tc := range []struct {
		name        string
		role        string
		setup       func(f *fakeNode)
		args        map[string]any
		wantChanged bool
		wantCmds    []string
		wantActions []string
	}{
		{name: "bare server: install", role: "server",
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s with the install script https://get.k3s.io"}},
		{name: "bare agent: install", role: "agent",
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s-agent.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s-agent with the install script https://get.k3s.io"}},
		{name: "up to date: nothing", role: "server",
			setup: func(f *fakeNode) {
				f.version = testVersion
				f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
			},
			wantCmds: nil, wantActions: []string{}},
		{name: "a version that only starts the same: install", role: "server", args: map[string]any{"allow_downgrade": true},
			setup: func(f *fakeNode) {
				f.version = testVersion + "0"
				f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
			},
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s with the install script https://get.k3s.io"}},
		{name: "an older version: upgrade", role: "agent",
			setup: func(f *fakeNode) {
				f.version = "v1.35.4+k3s1"
				f.units["k3s-agent"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
			},
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s-agent.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s-agent with the install script https://get.k3s.io"}},
		{name: "an older version and its unit gone, upgrade false: installed anyway", role: "agent", args: map[string]any{"upgrade": false},
			setup:       func(f *fakeNode) { f.version = "v1.35.4+k3s1" },
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s-agent.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s-agent with the install script https://get.k3s.io"}},
		{name: "unit removed: install again", role: "agent",
			setup:       func(f *fakeNode) { f.version = testVersion },
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s-agent.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s-agent with the install script https://get.k3s.io"}},
		{name: "stopped and disabled: enable and start", role: "server",
			setup:       func(f *fakeNode) { f.version = testVersion; f.units["k3s"] = &k3snode.UnitState{Loaded: true} },
			wantChanged: true, wantCmds: []string{"systemctl enable k3s.service", "systemctl start --no-block k3s.service"},
			wantActions: []string{"enable k3s", "start k3s"}},
		{name: "config changed: restart", role: "agent", args: map[string]any{"restart": true},
			setup: func(f *fakeNode) {
				f.version = testVersion
				f.units["k3s-agent"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
			},
			wantChanged: true, wantCmds: []string{"systemctl restart --no-block k3s-agent.service"},
			wantActions: []string{"restart k3s-agent for its new config"}},
		{name: "config changed and stopped: start, not restart", role: "agent", args: map[string]any{"restart": true},
			setup: func(f *fakeNode) {
				f.version = testVersion
				f.units["k3s-agent"] = &k3snode.UnitState{Loaded: true, Enabled: true}
			},
			wantChanged: true, wantCmds: []string{"systemctl start --no-block k3s-agent.service"},
			wantActions: []string{"start k3s-agent"}},
		{name: "config changed on a bare node: the install starts it", role: "server", args: map[string]any{"restart": true},
			wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s.service"},
			wantActions: []string{"install k3s v1.36.2+k3s1 as k3s with the install script https://get.k3s.io"}},
		{name: "moved from agent to server: the agent unit stops", role: "server",
			setup: func(f *fakeNode) {
				f.version = testVersion
				f.units["k3s-agent"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
			},
			wantChanged: true, wantCmds: []string{"systemctl stop k3s-agent.service", "systemctl disable k3s-agent.service", "download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s.service"},
			wantActions: []string{"stop and disable k3s-agent", "install k3s v1.36.2+k3s1 as k3s with the install script https://get.k3s.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			where := testPaths(t)
			args := map[string]any{"role": tc.role}
			for k, v := range tc.args {
				args[k] = v
			}

			check := newFakeNode()
			if tc.setup != nil {
				tc.setup(check)
			}
			res, code := runOn(t, check, where, with(args, "_ansible_check_mode", true, "_ansible_diff", true))
			require.Equal(t, 0, code, res["msg"])
			assert.Equal(t, tc.wantChanged, res["changed"], "check mode")
			assert.Empty(t, check.changes(), "check mode changes nothing")
			assert.Equal(t, toAny(tc.wantActions), res["actions"])
			if tc.wantChanged {
				diff := res["diff"].(map[string]any)
				assert.Contains(t, diff["after"], "k3s: "+testVersion)
				assert.NotEqual(t, diff["before"], diff["after"], "a change shows in the diff")
			}

			f := newFakeNode()
			if tc.setup != nil {
				tc.setup(f)
			}
			res, code = runOn(t, f, where, args)
			require.Equal(t, 0, code, res["msg"])
			assert.Equal(t, tc.wantChanged, res["changed"])
			assert.Equal(t, toAny(tc.wantActions), res["actions"])
			require.Len(t, f.changes(), len(tc.wantCmds), "%q", f.changes())
			for i, want := range tc.wantCmds {
				assert.True(t, strings.HasPrefix(f.changes()[i], want), "%q does not start with %q", f.changes()[i], want)
			}
			assert.Equal(t, testVersion, res["version"])
			if tc.role == "server" {
				assert.Equal(t, true, res["ready"])
			}

			f.commands = nil
			res, code = runOn(t, f, where, with(args, "restart", false))
			require.Equal(t, 0, code, res["msg"])
			assert.Equal(t, false, res["changed"], "a second run changes nothing")
			assert.Empty(t, f.changes())
		})
	}
}

// with is args with some keys set (a copy).
func with(args map[string]any, kv ...any) map[string]any { return ansibletest.With(args, kv...) }

func toAny(s []string) []any {
	out := []any{}
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// TestKeepsAnotherVersion: upgrade=false keeps an older k3s for the rolling
// upgrade, and a newer one is never downgraded unless allowed.
func TestKeepsAnotherVersion(t *testing.T) {
	for _, tc := range []struct {
		name, installed string
		args            map[string]any
		unit            *k3snode.UnitState
		wantChanged     bool
		wantCmds        []string
		wantPending     bool
		wantNewer       bool
		wantWarning     string
	}{
		{name: "older, upgrade false: kept, pending", installed: "v1.35.4+k3s1", args: map[string]any{"upgrade": false},
			unit: &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}, wantPending: true},
		{name: "older, upgrade false, config changed: restarted on its version", installed: "v1.35.4+k3s1", args: map[string]any{"upgrade": false, "restart": true},
			unit: &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}, wantPending: true, wantChanged: true, wantCmds: []string{"systemctl restart --no-block k3s.service"}},
		{name: "older, upgrade false, stopped: started on its version", installed: "v1.35.4+k3s1", args: map[string]any{"upgrade": false},
			unit: &k3snode.UnitState{Loaded: true, Enabled: true}, wantPending: true, wantChanged: true, wantCmds: []string{"systemctl start --no-block k3s.service"}},
		{name: "newer: kept with a warning", installed: "v1.37.0+k3s1",
			unit: &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}, wantNewer: true,
			wantWarning: "k3s v1.37.0+k3s1 on this node is newer than version v1.36.2+k3s1: left on it, not downgraded (allow_downgrade installs v1.36.2+k3s1)"},
		{name: "a dev build of a newer Kubernetes: kept with a warning", installed: "v1.37.0+k3s-1a2b3c4d",
			unit: &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}, wantNewer: true,
			wantWarning: "k3s v1.37.0+k3s-1a2b3c4d on this node is newer than version v1.36.2+k3s1: left on it, not downgraded (allow_downgrade installs v1.36.2+k3s1)"},
		{name: "newer, allow_downgrade: installed", installed: "v1.36.2+k3s2", args: map[string]any{"allow_downgrade": true},
			unit: &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}, wantChanged: true, wantCmds: []string{"download https://get.k3s.io", "sh ", "systemctl restart --no-block k3s.service"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			where := testPaths(t)
			args := map[string]any{"role": "server"}
			for k, v := range tc.args {
				args[k] = v
			}
			for _, check := range []bool{true, false} {
				f := newFakeNode()
				f.version = tc.installed
				u := *tc.unit
				f.units["k3s"] = &u
				res, code := runOn(t, f, where, with(args, "_ansible_check_mode", check))
				require.Equal(t, 0, code, res["msg"])
				assert.Equal(t, tc.wantChanged, res["changed"])
				assert.Equal(t, tc.wantPending, res["upgrade_pending"])
				assert.Equal(t, tc.wantNewer, res["newer_installed"])
				assert.Equal(t, tc.installed, res["previous_version"])
				if tc.wantWarning != "" {
					assert.Equal(t, []any{tc.wantWarning}, res["warnings"])
				}
				if check {
					assert.Empty(t, f.changes())
					continue
				}
				require.Len(t, f.changes(), len(tc.wantCmds), "%q", f.changes())
				for i, want := range tc.wantCmds {
					assert.True(t, strings.HasPrefix(f.changes()[i], want), "%q does not start with %q", f.changes()[i], want)
				}
				if !tc.wantPending && !tc.wantNewer {
					assert.Equal(t, testVersion, f.version)
				} else {
					assert.Equal(t, tc.installed, f.version, "never replaced")
				}
			}
		})
	}

	t.Run("newer and its unit gone: refused, naming both versions", func(t *testing.T) {
		f := newFakeNode()
		f.version = "v1.37.0+k3s1"
		res, code := runOn(t, f, testPaths(t), map[string]any{"role": "agent"})
		assert.Equal(t, 1, code)
		assert.Equal(t, "k3s v1.37.0+k3s1 on this node is newer than version v1.36.2+k3s1 and its unit k3s-agent is gone: set version to v1.37.0+k3s1 to repair it, or allow_downgrade to install v1.36.2+k3s1", res["msg"])
		assert.Empty(t, f.changes())
	})
}

func TestWaitsForReadyz(t *testing.T) {
	where := testPaths(t)
	f := newFakeNode()
	f.readyAfter = 2
	res, code := runOn(t, f, where, map[string]any{"role": "server"})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, 3, f.readyCalls)
	assert.Equal(t, true, res["ready"])
	assert.Empty(t, f.readySANs, "no tls-san in the config")

	// Ready over a certificate holding the config's tls-san, as k3s merges its drop-ins.
	require.NoError(t, os.MkdirAll(configPath+".d", 0o700))
	require.NoError(t, os.WriteFile(configPath, []byte("tls-san: [k3s-api.home.arpa]\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(configPath+".d", "50-vip.yaml"), []byte("tls-san+: [10.0.0.9]\n"), 0o600))
	f = newFakeNode()
	res, code = runOn(t, f, where, map[string]any{"role": "server"})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, []string{"k3s-api.home.arpa", "10.0.0.9"}, f.readySANs)

	f = newFakeNode()
	f.readyAfter = 1000
	res, code = runOn(t, f, where, map[string]any{"role": "server", "wait_timeout": 1})
	assert.Equal(t, 1, code)
	assert.Equal(t, "the k3s API on this node did not answer /readyz with ok within 1s: last: connection refused", res["msg"])
	assert.Equal(t, false, res["ready"])

	f = newFakeNode()
	f.readyAfter = 1000
	res, code = runOn(t, f, where, map[string]any{"role": "agent"})
	require.Equal(t, 0, code, res["msg"])
	assert.Zero(t, f.readyCalls, "agents serve no API")
}

func TestInstallScriptChecksum(t *testing.T) {
	where := testPaths(t)
	f := newFakeNode()
	res, code := runOn(t, f, where, map[string]any{"role": "server", "install_script_sha256": strings.Repeat("0", 64)})
	assert.Equal(t, 1, code)
	assert.Equal(t, "install script https://get.k3s.io: sha256 "+sha256Hex([]byte(testScript))+", expected "+strings.Repeat("0", 64)+" (install_script_sha256); not run", res["msg"])
	assert.Equal(t, []string{"download https://get.k3s.io"}, f.changes())

	res, code = runOn(t, f, where, map[string]any{"role": "server", "install_script_sha256": strings.ToUpper(sha256Hex([]byte(testScript)))})
	require.Equal(t, 0, code, res["msg"])

	f = newFakeNode()
	f.installErr = errors.New("exit status 1")
	res, code = runOn(t, f, where, map[string]any{"role": "agent"})
	assert.Equal(t, 1, code)
	assert.Regexp(t, `^install k3s v1\.36\.2\+k3s1 \(.*k3s-install-.*\.sh\): exit status 1: \[ERROR\] Download failed$`, res["msg"])
}

func TestAirgap(t *testing.T) {
	where := testPaths(t)
	src := t.TempDir()
	files := map[string][]byte{"k3s": []byte("k3s binary"), "install.sh": []byte(testScript), "k3s-airgap-images-amd64.tar.zst": []byte("images")}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(src, name), content, 0o600))
	}
	args := map[string]any{
		"role": "server", "install_source": "airgap",
		"airgap_binary": filepath.Join(src, "k3s"), "airgap_binary_sha256": sha256Hex(files["k3s"]),
		"airgap_script": filepath.Join(src, "install.sh"), "airgap_script_sha256": sha256Hex(files["install.sh"]),
		"airgap_images": filepath.Join(src, "k3s-airgap-images-amd64.tar.zst"), "airgap_images_sha256": sha256Hex(files["k3s-airgap-images-amd64.tar.zst"]),
	}

	t.Run("files still on the controller: asks for them", func(t *testing.T) {
		f := newFakeNode()
		res, code := runOn(t, f, where, args)
		assert.Equal(t, 1, code)
		assert.Equal(t, true, res["airgap_transfer_needed"])
		assert.Empty(t, f.changes())
	})
	t.Run("check mode needs no files", func(t *testing.T) {
		f := newFakeNode()
		res, code := runOn(t, f, where, with(args, "_ansible_check_mode", true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.NotContains(t, res, "airgap_transfer_needed")
	})
	t.Run("a file that does not match its sha256 installs nothing", func(t *testing.T) {
		f := newFakeNode()
		res, code := runOn(t, f, where, with(args, "remote_src", true, "airgap_images_sha256", strings.Repeat("a", 64)))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "airgap_images "+filepath.Join(src, "k3s-airgap-images-amd64.tar.zst")+" on the node: sha256 "+sha256Hex(files["k3s-airgap-images-amd64.tar.zst"])+", expected aaaa")
		assert.NoFileExists(t, filepath.Join(where.BinDir, "k3s"))
		assert.Empty(t, f.changes())
	})
	t.Run("on the node: placed and installed", func(t *testing.T) {
		f := newFakeNode()
		res, code := runOn(t, f, where, with(args, "remote_src", true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, []any{"install k3s v1.36.2+k3s1 as k3s with the airgap files"}, res["actions"])
		assert.Equal(t, []string{"sh " + filepath.Join(where.BinDir, "k3s-install.sh"), "systemctl restart --no-block k3s.service"}, f.changes())
		for dest, content := range map[string][]byte{
			filepath.Join(where.BinDir, "k3s"):                                                 files["k3s"],
			filepath.Join(where.BinDir, "k3s-install.sh"):                                      files["install.sh"],
			filepath.Join(where.DataDir, "agent", "images", "k3s-airgap-images-amd64.tar.zst"): files["k3s-airgap-images-amd64.tar.zst"],
		} {
			got, err := os.ReadFile(dest)
			require.NoError(t, err)
			assert.Equal(t, content, got)
		}
		info, err := os.Stat(filepath.Join(where.BinDir, "k3s"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	})
	t.Run("airgap files with the script source are refused", func(t *testing.T) {
		res, code := runOn(t, newFakeNode(), where, with(args, "install_source", "script"))
		assert.Equal(t, 1, code)
		assert.Contains(t, res["msg"], "is set but install_source is script")
	})
}

func TestVersionFormat(t *testing.T) {
	for v, ok := range map[string]bool{
		"v1.36.2+k3s1": true, "v1.36.2-rc1+k3s2": true, "v1.36.2+k3s10": true, "v1.36.2+k3s-1a2b3c4d": false, // a dev build installs by commit
		"1.36.2+k3s1": false, "v1.36+k3s1": false, "v1.36.2": false, "v1.36.2+k3s": false, "v1.36.x+k3s1": false, "latest": false,
	} {
		assert.Equal(t, ok, isK3sVersion(v), v)
	}
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestJoinRefusal(t *testing.T) {
	rejected := `level=info msg="Waiting to retrieve agent configuration; server is not ready: Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag"`
	assert.Empty(t, joinRefusal("Starting k3s-agent.service\nFailed to validate connection to cluster", "node4"), "retrying until the server answers: no refusal")
	assert.Empty(t, joinRefusal(rejected+"\n"+rejected, "node4"), "twice: the Node's Secret may be on its way out")
	got := joinRefusal("Starting k3s-agent.service\n"+strings.Repeat(rejected+"\n", 3), "node4")
	assert.Contains(t, got, "The cluster has a Node node4 that joined with another password")
	assert.Contains(t, got, "delete it (`kubectl delete node node4`: k3s deletes the Secret kube-system/node4.node-password.k3s with it)")
	assert.Contains(t, got, "node-name or with-node-id")
	assert.Contains(t, joinRefusal(strings.Repeat(rejected+"\n", 3), ""), "a Node <this host's node name>")
	assert.Equal(t, "node4", nodeNameOf([]step{{option: "k3s_registries"}, {option: "k3s_config", converged: k3sconfig.Converged{NodeName: "node4"}}}))
	assert.Empty(t, nodeNameOf(nil))
}

// A k3s that never reports ready (an agent that cannot join: the server
// unreachable, a wrong token) or that keeps exiting fails the task within
// wait_timeout, naming the unit's state, its restarts and its journal; it
// never hangs.
func TestNeverReady(t *testing.T) {
	unitPollInterval = 10 * time.Millisecond
	t.Cleanup(func() { unitPollInterval = 200 * time.Millisecond })
	for name, tc := range map[string]struct {
		setup func(f *fakeNode)
		want  string
	}{
		"installed, never ready": {func(f *fakeNode) { f.neverReady["k3s-agent"] = true },
			"k3s-agent did not report ready within 3s: enabled, activating (start), restarted 0 times since this task started it; its journal ends: Starting k3s agent | Failed to validate connection to cluster at https://10.0.0.1:6443"},
		"installed, crash-looping": {func(f *fakeNode) { f.crashLooping["k3s-agent"] = true },
			"k3s-agent is crash-looping: k3s exited and systemd restarted it 3 times since this task started it (enabled, activating (auto-restart)); its journal ends: "},
		"node password rejected three times: before the deadline, naming what to delete": {func(f *fakeNode) {
			f.neverReady["k3s-agent"] = true
			f.journal = "Starting k3s-agent.service - Lightweight Kubernetes...\n" + strings.Repeat(`level=info msg="Waiting to retrieve agent configuration; server is not ready: Node password rejected, duplicate hostname or contents of '/etc/rancher/node/password' may not match server node-passwd entry, try enabling a unique node name with the --with-node-id flag"`+"\n", 3)
		}, "k3s-agent cannot join (enabled, activating (start)): the server rejected this host's node password, so k3s would retry for ever. The cluster has a Node <this host's node name> that joined with another password"},
		"the deadline passes while systemctl answers: the timeout, not systemctl's death": {func(f *fakeNode) {
			f.neverReady["k3s-agent"] = true
			f.showsAnswered = 4 // the module's look before the install, then 3 polls
		}, "k3s-agent did not report ready within 3s: enabled, activating (start), restarted 0 times since this task started it; its journal ends: Starting k3s agent"},
		"crash-looping before the task: not taken for active": {func(f *fakeNode) {
			f.version = testVersion
			f.crashLooping["k3s-agent"] = true
			f.units["k3s-agent"] = &k3snode.UnitState{Loaded: true, Enabled: true, ActiveState: "activating", SubState: "auto-restart"}
		}, "k3s-agent is crash-looping"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeNode()
			tc.setup(f)
			const wait = 3 * time.Second
			start := time.Now()
			res, code := runOn(t, f, testPaths(t), map[string]any{"role": "agent", "wait_timeout": int(wait.Seconds())})
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.want)
			assert.Less(t, time.Since(start), wait+2*time.Second, "ends at the deadline, it does not hang")
			if strings.Contains(tc.want, "cannot join") {
				// The message says the refusal ended it; and so before the deadline.
				assert.Less(t, time.Since(start), wait, "not at the deadline")
			}
		})
	}
}

// TestProxy: the proxy reaches the install (its environment) and the
// unit's environment file (0600, other lines kept, passwords masked in the
// output); a changed proxy restarts k3s; the same one changes nothing.
func TestProxy(t *testing.T) {
	const password = "proxy-secret-4e1b"
	where := testPaths(t)
	envFile := filepath.Join(where.UnitDir, "k3s-agent.service.env")
	f := newFakeNode()
	withProxy := func(https string) map[string]any {
		return map[string]any{"role": "agent", "proxy": map[string]any{"https_proxy": https, "no_proxy": []any{"localhost", "10.42.0.0/16"}}}
	}
	proxyURL := "http://homelab:" + password + "@proxy.home.arpa:3128"

	res, code := runOn(t, f, where, withProxy(proxyURL))
	require.Equal(t, 0, code, res["msg"])
	assert.Contains(t, f.lastEnv, "HTTPS_PROXY="+proxyURL, "the install script's environment")
	assert.Contains(t, f.lastEnv, "https_proxy="+proxyURL, "curl's lower-case variable too")
	raw, err := os.ReadFile(envFile)
	require.NoError(t, err)
	assert.Equal(t, "HTTPS_PROXY="+proxyURL+"\nNO_PROXY=localhost,10.42.0.0/16\nhttps_proxy="+proxyURL+"\nno_proxy=localhost,10.42.0.0/16\n", string(raw))
	st, err := os.Stat(envFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	f.commands = nil
	res, code = runOn(t, f, where, withProxy(proxyURL))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "the same proxy: nothing")
	assert.Empty(t, f.changes())

	// Another line of the file (the install script's K3S_ ones) stays; a new proxy restarts.
	require.NoError(t, os.WriteFile(envFile, append([]byte("K3S_KUBECONFIG_MODE=644\n"), raw...), 0o600))
	res, code = runOn(t, f, where, map[string]any{"_ansible_diff": true, "role": "agent", "proxy": map[string]any{"https_proxy": "http://proxy2.home.arpa:3128"}})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, []string{"systemctl restart --no-block k3s-agent.service"}, f.changes())
	raw, err = os.ReadFile(envFile)
	require.NoError(t, err)
	assert.Equal(t, "K3S_KUBECONFIG_MODE=644\nHTTPS_PROXY=http://proxy2.home.arpa:3128\nhttps_proxy=http://proxy2.home.arpa:3128\n", string(raw))
	diff := fmt.Sprint(res["diff"])
	assert.Contains(t, diff, "proxy2.home.arpa")
	assert.NotContains(t, diff, password, "the old password masked in the diff")
}

// TestProxyPasswordForms: a proxy password is masked in every form it can
// take (as written, percent-decoded, percent-encoded again), in the diff of
// the file it replaces, and when the task fails, valid or not.
func TestProxyPasswordForms(t *testing.T) {
	// As written: lower-case hex, so the re-encoded form (%3A) differs.
	const written = "s3cr%40t%3apw%21"
	forms := []string{written, "s3cr@t:pw!", "s3cr%40t%3Apw%21", "s3cr@t:pw%21"}
	proxyURL := "http://homelab:" + written + "@proxy.lan:3128"
	for _, tc := range []struct {
		name     string
		file     string // the unit's environment file before
		args     map[string]any
		failed   bool
		contains string // in the diff
	}{
		{name: "new proxy, diff", args: map[string]any{"proxy": map[string]any{"http_proxy": proxyURL}}, contains: "proxy.lan"},
		{name: "the file's old proxy replaced, diff", file: "HTTP_PROXY=" + proxyURL + "\nhttp_proxy='" + proxyURL + "'\n",
			args: map[string]any{"proxy": map[string]any{"http_proxy": "http://proxy2.lan:3128"}}, contains: "proxy2.lan"},
		{name: "a bad option beside it", args: map[string]any{"proxy": map[string]any{"http_proxy": proxyURL}, "wait_timeout": "soon"}, failed: true},
		{name: "a bad sub-option beside it", args: map[string]any{"proxy": map[string]any{"https_proxy": proxyURL, "no_proxi": []any{"localhost"}}}, failed: true},
		{name: "the install fails", args: map[string]any{"proxy": map[string]any{"https_proxy": proxyURL}, "install_fails": true}, failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			where := testPaths(t)
			f := newFakeNode()
			if tc.file != "" {
				res, code := runOn(t, f, where, map[string]any{"role": "agent"})
				require.Equal(t, 0, code, res["msg"])
				require.NoError(t, os.MkdirAll(where.UnitDir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(where.UnitDir, "k3s-agent.service.env"), []byte(tc.file), 0o600))
			}
			args := map[string]any{"role": "agent", "_ansible_diff": true, "_ansible_verbosity": 3}
			for k, v := range tc.args {
				args[k] = v
			}
			if args["install_fails"] != nil {
				delete(args, "install_fails")
				f.installErr = errors.New("curl: (56) CONNECT tunnel failed, response 407 from " + proxyURL)
			}
			full := map[string]any{"version": testVersion, "data_dir": where.DataDir, "kubeconfig_path": where.Kubeconfig, "wait_timeout": 5}
			for k, v := range args {
				full[k] = v
			}
			res, code, raw := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, f, where)
			}, full)
			assert.Equal(t, tc.failed, code != 0, res["msg"])
			for _, form := range forms {
				assert.NotContains(t, raw, form)
			}
			if tc.contains != "" {
				assert.Contains(t, fmt.Sprint(res["diff"]), tc.contains)
			}
		})
	}
}
