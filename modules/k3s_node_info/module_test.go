package k3snodeinfo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
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

func (f *fakeServer) Download(context.Context, string, k3snode.Proxy) ([]byte, error) {
	return nil, errors.New("no downloads")
}

func (f *fakeServer) Readyz(context.Context, string, int, []string) error { return nil }
func (f *fakeServer) Supervisor(context.Context, string, string, string, string, string, []byte) (int, string, error) {
	return 0, "", errors.New("no supervisor here")
}

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
	assert.Equal(t, res["hostname"], res["node_name"], "no node-name: the host name")
	res, code = runInfo(map[string]any{"node_name": "Pi-One"})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "pi-one", res["node_name"], "node-name, lower-cased as k3s does")
	res, code = runInfo(map[string]any{"with_node_id": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "", res["node_name"], "with-node-id before k3s made the id: not known")
	assert.Equal(t, "", res["server"], "no config: joined no server")

	configPath = filepath.Join(dir, "config.yaml")
	t.Cleanup(func() { configPath = k3sconfig.DefaultPath })
	require.NoError(t, os.WriteFile(configPath, []byte("server: https://10.0.0.12:6443\ntoken: secret\n"), 0o600))
	res, code = runInfo(map[string]any{})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "https://10.0.0.12:6443", res["server"], "the server its config joins")

	require.NoError(t, os.WriteFile(where.NodeID, []byte("5a1b2c3d\n"), 0o644))
	res, code = runInfo(map[string]any{})
	require.Equal(t, 0, code, res["msg"])
	assert.NotContains(t, res, "token")
	assert.NotContains(t, res, "kubeconfig")
	assert.Equal(t, "5a1b2c3d", res["node_id"])
	res, code = runInfo(map[string]any{"node_name": "Pi", "with_node_id": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "pi-5a1b2c3d", res["node_name"], "with-node-id: the name, then the id")

	require.NoError(t, os.Remove(k3snode.TokenPath(where)))
	res, code = runInfo(map[string]any{"return_token": true})
	assert.Equal(t, 1, code)
	assert.Equal(t, "read the node token "+k3snode.TokenPath(where)+": no such file or directory", res["msg"])
	res, code = runInfo(map[string]any{"return_kubeconfig": true, "kubeconfig_path": "/nonexistent/k3s.yaml"})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "read the kubeconfig ")
}

// certificate_warning_days reads k3s's certificates and warns about the
// earliest when it expires within that many days; 0 reads none.
func TestCertificateWarning(t *testing.T) {
	dir := t.TempDir()
	where := k3snode.Paths{BinDir: dir, DataDir: filepath.Join(dir, "data"), Kubeconfig: filepath.Join(dir, "k3s.yaml"), NodeID: filepath.Join(dir, "id")}
	runInfo := func(args map[string]any) (map[string]any, int) {
		args["data_dir"], args["kubeconfig_path"] = where.DataDir, where.Kubeconfig
		res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return run(ctx, req, &fakeServer{}, where)
		}, args)
		return res, code
	}
	res, code := runInfo(map[string]any{"certificate_warning_days": 90})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, map[string]any{"count": 0.0}, res["certificates"], "no k3s: none")
	assert.NotContains(t, res, "warnings")

	path := filepath.Join(where.DataDir, "agent", "client-kubelet.crt")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	notAfter := time.Now().Add(30*24*time.Hour + time.Hour).UTC().Truncate(time.Second)
	cert, err := pki.SelfSigned("system:node:node1", notAfter)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, cert, 0o644))

	res, code = runInfo(map[string]any{"certificate_warning_days": 90})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, map[string]any{"count": 1.0, "earliest": map[string]any{"path": path, "subject": "system:node:node1",
		"not_after": notAfter.Format(time.RFC3339), "days_left": 30.0}}, res["certificates"])
	require.Len(t, res["warnings"], 1)
	assert.Contains(t, res["warnings"].([]any)[0], `k3s's certificate "system:node:node1" (`+path+`) expires on `+notAfter.Format("2006-01-02")+", in 30 days")

	res, code = runInfo(map[string]any{"certificate_warning_days": 20})
	require.Equal(t, 0, code, res["msg"])
	assert.NotContains(t, res, "warnings", "30 days left, 20 asked")
	res, code = runInfo(map[string]any{})
	require.Equal(t, 0, code, res["msg"])
	assert.NotContains(t, res, "certificates", "0: not read")
	res, code = runInfo(map[string]any{"certificate_warning_days": -1})
	assert.Equal(t, 1, code)
	assert.Equal(t, "certificate_warning_days is -1: expected 0 (certificates not read) or a number of days", res["msg"])

	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o644))
	res, code = runInfo(map[string]any{"certificate_warning_days": 90, "return_token": true})
	assert.Equal(t, 1, code)
	assert.Equal(t, "read k3s's certificates: "+path+": no PEM certificate in it", res["msg"], "failed before any secret was read")
}

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

// Preflight: strict fails naming every error finding and its fix, warn
// reports them all as warnings; without the option nothing is checked.
func TestPreflight(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpuset cpu io pids\n",
		"boot/firmware/cmdline.txt":        "console=serial0,115200 root=PARTUUID=1 rootwait\n",
		"proc/modules":                     "overlay 1 0 - Live 0x0\nbr_netfilter 1 0 - Live 0x0\nvxlan 1 0 - Live 0x0\n",
		"proc/swaps":                       "Filename\tType\tSize\tUsed\tPriority\n/var/swap\tfile\t102396\t0\t-2\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	saved := thisHost
	t.Cleanup(func() { thisHost = saved })
	thisHost = func() preflight.Host {
		return preflight.Host{Root: root, Release: "6.6.31",
			LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil },
			FreeDisk: func(string) (uint64, error) { return 20 << 30, nil }}
	}
	dir := t.TempDir()
	where := k3snode.Paths{BinDir: dir, DataDir: filepath.Join(dir, "data"), Kubeconfig: filepath.Join(dir, "k3s.yaml"), NodeID: filepath.Join(dir, "id")}
	runInfo := func(args map[string]any) (map[string]any, int) {
		res, code, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return run(ctx, req, &fakeServer{}, where)
		}, args)
		return res, code
	}

	res, code := runInfo(map[string]any{"preflight": map[string]any{"role": "agent"}, "_ansible_check_mode": true})
	assert.Equal(t, 1, code)
	assert.Equal(t, `this host is not ready for k3s as an agent (nothing was changed): memory cgroup: cgroup v2 without the memory controller (/sys/fs/cgroup/cgroup.controllers: cpuset cpu io pids). Fix: add "cgroup_memory=1 cgroup_enable=memory" at the end of the single line in /boot/firmware/cmdline.txt, then reboot`, res["msg"])
	assert.Len(t, res["preflight"], 2, "both findings returned")
	assert.Contains(t, res["warnings"], "not ready for k3s (warning): swap: swap is on: /var/swap. Fix: k3s runs with it, but memory limits do not count swap: swapoff -a and remove it from /etc/fstab (on Pi OS: dphys-swapfile swapoff, systemctl disable dphys-swapfile)")

	res, code = runInfo(map[string]any{"preflight": map[string]any{"role": "server", "mode": "warn"}})
	require.Equal(t, 0, code, res["msg"])
	assert.Len(t, res["warnings"], 2)
	assert.Contains(t, res["warnings"].([]any)[0], "not ready for k3s (error): memory cgroup")

	// A Pi whose command line preparation fixed, rebooting before the install (--check).
	res, code = runInfo(map[string]any{"preflight": map[string]any{"role": "agent", "reboot_pending": true}, "_ansible_check_mode": true})
	require.Equal(t, 0, code, res["msg"])
	assert.Contains(t, res["warnings"], "not ready for k3s (warning): memory cgroup: cgroup v2 without the memory controller (/sys/fs/cgroup/cgroup.controllers: cpuset cpu io pids). Fix: none by hand: the kernel command line as prepared enables it, and the host reboots before k3s is installed")

	res, code = runInfo(map[string]any{})
	require.Equal(t, 0, code, res["msg"])
	assert.NotContains(t, res, "preflight")

	res, code = runInfo(map[string]any{"preflight": map[string]any{"role": "worker"}})
	assert.Equal(t, 1, code)
	assert.Contains(t, res["msg"], "preflight")
	assert.Contains(t, res["msg"], "role")

	// The firewall is read once, for the result and the checks both (firewalld's read runs
	// firewall-cmd three times).
	reads := 0
	thisHost = func() preflight.Host {
		return preflight.Host{Root: root, Release: "6.6.31",
			LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil },
			FreeDisk: func(string) (uint64, error) { return 20 << 30, nil },
			Firewall: func() (firewall.State, error) {
				reads++
				return firewall.State{Firewall: firewall.UFW, Allowed: []string{"allow 22/tcp"}}, nil
			}}
	}
	res, code = runInfo(map[string]any{"preflight": map[string]any{"role": "agent", "mode": "warn"}})
	require.Equal(t, 0, code, res["msg"])
	assert.Equal(t, "ufw", res["firewall"])
	assert.Equal(t, 1, reads)
	assert.Contains(t, strings.Join(toStrings(res["warnings"]), "\n"), "firewall: ufw is active and does not let in 10250/tcp")
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
