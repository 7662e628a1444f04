package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

const testToken = "K10cafe::server:node-token-secret-4242"

// fakeServer is a node with k3s v1.36.2+k3s1 running as a server.
type fakeServer struct{ commands []string }

func (f *fakeServer) Run(_ context.Context, _ []string, name string, args ...string) (string, error) {
	f.commands = append(f.commands, name+" "+strings.Join(args, " "))
	if filepath.Base(name) == "k3s" {
		return "k3s version v1.36.2+k3s1 (abc123)\n", nil
	}
	if strings.Contains(args[len(args)-1], "k3s-agent") {
		return "LoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\nNRestarts=0\n", nil
	}
	return "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nNRestarts=2\n", nil
}

func (f *fakeServer) Download(context.Context, string) ([]byte, error) {
	return nil, errors.New("no downloads")
}

func (f *fakeServer) Readyz(context.Context, string, int) error { return nil }

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	where := k3snode.Paths{BinDir: dir, DataDir: filepath.Join(dir, "data"), Kubeconfig: filepath.Join(dir, "k3s.yaml"), NodeID: filepath.Join(dir, "id")}
	require.NoError(t, os.MkdirAll(filepath.Join(where.DataDir, "server"), 0o700))
	require.NoError(t, os.WriteFile(k3snode.TokenPath(where), []byte(testToken+"\n"), 0o600))
	require.NoError(t, os.WriteFile(where.Kubeconfig, []byte("apiVersion: v1\n"), 0o600))
	f := &fakeServer{}
	runInfo := func(args map[string]any) (map[string]any, int) {
		args["data_dir"] = where.DataDir
		if args["kubeconfig_path"] == nil {
			args["kubeconfig_path"] = where.Kubeconfig
		}
		res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return run(ctx, req, f, where)
		}, args)
		return res, code
	}

	res, code := runInfo(map[string]any{"return_token": true, "return_kubeconfig": true, "_ansible_check_mode": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, false, res["changed"])
	assert.Equal(t, "v1.36.2+k3s1", res["version"])
	assert.Equal(t, map[string]any{
		"k3s":       map[string]any{"loaded": true, "enabled": true, "active": true, "active_state": "active", "sub_state": "running", "restarts": 2.0},
		"k3s-agent": map[string]any{"loaded": false, "enabled": false, "active": false, "active_state": "inactive", "sub_state": "dead", "restarts": 0.0},
	}, res["units"])
	assert.Equal(t, testToken, res["token"])
	assert.Equal(t, "apiVersion: v1\n", res["kubeconfig"])
	for _, c := range f.commands {
		assert.True(t, strings.HasSuffix(c, " --version") || strings.HasPrefix(c, "systemctl show "), "only reads: %s", c)
	}

	assert.Equal(t, "", res["node_id"], "no with-node-id id yet")

	require.NoError(t, os.WriteFile(where.NodeID, []byte("5a1b2c3d\n"), 0o644))
	res, code = runInfo(map[string]any{})
	require.Equal(t, 0, code, res["msg"])
	assert.NotContains(t, res, "token")
	assert.NotContains(t, res, "kubeconfig")
	assert.Equal(t, "5a1b2c3d", res["node_id"])

	require.NoError(t, os.Remove(k3snode.TokenPath(where)))
	res, code = runInfo(map[string]any{"return_token": true})
	assert.Equal(t, 1, code)
	assert.Equal(t, "read the node token "+k3snode.TokenPath(where)+": no such file or directory", res["msg"])
	res, code = runInfo(map[string]any{"return_kubeconfig": true, "kubeconfig_path": "/nonexistent/k3s.yaml"})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "read the kubeconfig ")
}

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, module)
}
