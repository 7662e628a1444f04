package k3snodemodule

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

const (
	oldSecret = "old-cluster-secret-1111"
	newSecret = "new-cluster-secret-2222"
)

func TestTokenChange(t *testing.T) {
	server := args{Role: "server", DataDir: "/var/lib/rancher/k3s"}
	rotate, follow := server, server
	rotate.TokenRotation, follow.TokenRotation = "rotate", "follow"
	agent := args{Role: "agent", TokenRotation: "rotate"}
	mismatch := tokens{given: newSecret, stored: oldSecret, server: "https://10.0.0.1:6443"}
	for _, tc := range []struct {
		name   string
		a      args
		t      tokens
		active bool
		want   string
		err    string
	}{
		{name: "the same token", a: server, t: tokens{given: oldSecret, stored: oldSecret}, active: true},
		{name: "never bootstrapped: the token is the cluster's first", a: rotate, t: tokens{given: newSecret}, active: true},
		{name: "no token given", a: server, t: tokens{stored: oldSecret}, active: true},
		{name: "another token, not asked to rotate", a: server, t: mismatch, active: true,
			err: "k3s_config.token is another secret than the one this server's datastore was bootstrapped with (/var/lib/rancher/k3s/server/token): k3s would refuse to start"},
		{name: "rotate", a: rotate, t: mismatch, active: true, want: "rotate"},
		{name: "rotated already: nothing to do", a: rotate, t: tokens{given: newSecret, stored: newSecret}, active: true},
		{name: "rotate where k3s does not run", a: rotate, t: mismatch, err: "token_rotation is rotate: k3s is not running on this server"},
		{name: "follow", a: follow, t: mismatch, want: "follow"},
		{name: "followed already", a: follow, t: tokens{given: newSecret, stored: newSecret, server: "https://10.0.0.1:6443"}, active: true},
		{name: "follow without the server", a: follow, t: tokens{given: newSecret, stored: oldSecret},
			err: "token_rotation is follow: rotated_on (or k3s_config.server) must name the server the token was rotated on"},
		{name: "rotation without a token", a: rotate, t: tokens{stored: oldSecret}, active: true,
			err: "token_rotation is rotate: k3s_config.token must be the cluster's new token"},
		{name: "an agent", a: agent, t: tokens{given: newSecret}, active: true,
			err: "token_rotation is rotate but role is agent: only a server's datastore holds the cluster token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tokenChange(tc.a, tc.t, tc.active)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), oldSecret)
				assert.NotContains(t, err.Error(), newSecret)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// tokenServer is a server whose k3s runs, bootstrapped with oldSecret, and
// its config written with it.
func tokenServer(t *testing.T) (*fakeNode, k3snode.Paths, string) {
	t.Helper()
	where := testPaths(t)
	f := newFakeNode()
	f.version = testVersion
	f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
	f.tokenFile = k3snode.BootstrapTokenPath(where)
	f.clusterSecret = oldSecret
	require.NoError(t, os.WriteFile(f.tokenFile, []byte("K10cafe::server:"+oldSecret+"\n"), 0o600))
	writeAdminKubeconfig(t, where)
	configPath := filepath.Join(t.TempDir(), "config.yaml")
	res, code := runOn(t, f, where, map[string]any{"role": "server", "k3s_config": map[string]any{"path": configPath, "role": "server", "token": oldSecret}})
	require.Equal(t, 0, code, res["msg"])
	f.commands = nil
	return f, where, configPath
}

func tokenArgs(configPath, mode, server string) map[string]any {
	cfg := map[string]any{"path": configPath, "role": "server", "token": newSecret}
	if server != "" {
		cfg["server"] = server
	}
	return map[string]any{"role": "server", "token_rotation": mode, "k3s_config": cfg}
}

func TestRotateToken(t *testing.T) {
	f, where, configPath := tokenServer(t)
	before, err := os.ReadFile(configPath)
	require.NoError(t, err)

	// Check mode asks nothing and writes nothing.
	res, code := runOn(t, f, where, with(tokenArgs(configPath, "rotate", ""), "_ansible_check_mode", true, "_ansible_diff", true))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["changed"])
	assert.Equal(t, true, res["token_rotated"])
	assert.Contains(t, res["actions"], "rotate the cluster token on this server (PUT /v1-k3s/token, as k3s token rotate does)")
	assert.Empty(t, f.changes())
	after, err := os.ReadFile(configPath)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.Contains(t, fmt.Sprint(res["diff"]), "(with the cluster's new token, rotated here)")

	res, code = runOn(t, f, where, tokenArgs(configPath, "rotate", ""))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["token_rotated"])
	assert.Equal(t, []string{"PUT https://127.0.0.1:6443/v1-k3s/token", "systemctl restart --no-block k3s.service"}, f.changes(),
		"rotated through k3s's own supervisor, where its kubeconfig says it listens, then restarted")
	assert.Equal(t, newSecret, f.clusterSecret)
	stored, err := k3snode.StoredClusterSecret(where)
	require.NoError(t, err)
	assert.Equal(t, newSecret, stored)
	config, err := os.ReadFile(configPath)
	require.NoError(t, err)
	assert.Contains(t, string(config), "token: "+newSecret)

	f.commands = nil
	res, code = runOn(t, f, where, tokenArgs(configPath, "rotate", ""))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"], "rotated already")
	assert.Equal(t, false, res["token_rotated"])
	assert.Empty(t, f.changes())
}

// A server restarted with a config whose token is rotated already (the
// config was written, the restart failed) is restarted: k3s takes a token
// only as it starts.
func TestRotateTokenRestartsWhereTheConfigHasIt(t *testing.T) {
	f, where, configPath := tokenServer(t)
	require.NoError(t, os.WriteFile(configPath, []byte(strings.ReplaceAll(mustRead(t, configPath), oldSecret, newSecret)), 0o600))
	f.clusterSecret = newSecret // rotated on another server
	res, code := runOn(t, f, where, tokenArgs(configPath, "follow", "https://10.0.0.1:6443"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, true, res["token_rotated"])
	assert.Equal(t, []string{"GET https://10.0.0.1:6443/v1-k3s/encrypt/status", "systemctl restart --no-block k3s.service"}, f.changes())
}

// rotated_on names the server asked where k3s_config.server is a
// load balancer.
func TestFollowAsksTheServerNamed(t *testing.T) {
	f, where, configPath := tokenServer(t)
	f.clusterSecret = newSecret
	res, code := runOn(t, f, where, with(tokenArgs(configPath, "follow", "https://k3s-api.home.arpa:6443"), "rotated_on", "https://10.0.0.1:6443"))
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "GET https://10.0.0.1:6443/v1-k3s/encrypt/status", f.changes()[0])
	assert.Contains(t, res["actions"], "take the cluster's new token, rotated on https://10.0.0.1:6443")
	assert.Contains(t, mustRead(t, configPath), "server: https://k3s-api.home.arpa:6443", "the config keeps its own")
}

func TestRotateTokenRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *fakeNode)
		mode    string
		server  string
		msg     string
		request string
	}{
		{name: "k3s answers with an error", setup: func(f *fakeNode) { f.supervisorStatus = 500 }, mode: "rotate",
			msg: "rotate the cluster token on this server: k3s answered 500: etcd: request timed out; nothing was written", request: "PUT https://127.0.0.1:6443/v1-k3s/token"},
		{name: "the server followed has not rotated it", mode: "follow", server: "https://10.0.0.1:6443",
			msg:     "token_rotation is follow: https://10.0.0.1:6443 does not accept the new token (401): rotate it there first (token_rotation=rotate); k3s here would refuse to start with it, so nothing was written",
			request: "GET https://10.0.0.1:6443/v1-k3s/encrypt/status"},
		{name: "k3s stopped", setup: func(f *fakeNode) { f.units["k3s"].Active = false }, mode: "rotate",
			msg: "token_rotation is rotate: k3s is not running on this server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, where, configPath := tokenServer(t)
			before := mustRead(t, configPath)
			if tc.setup != nil {
				tc.setup(f)
			}
			res, code := runOn(t, f, where, tokenArgs(configPath, tc.mode, tc.server))
			assert.Equal(t, 1, code)
			assert.Contains(t, res["msg"], tc.msg)
			var want []string
			if tc.request != "" {
				want = []string{tc.request}
			}
			assert.Equal(t, want, f.changes(), "nothing but the request")
			assert.Equal(t, before, mustRead(t, configPath), "the config is not written")
			assert.Equal(t, oldSecret, f.clusterSecret)
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}
