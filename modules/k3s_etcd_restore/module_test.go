package k3setcdrestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/etcdsnapshot/etcdsnapshottest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"step": "stop"}))
}

// fakeNode is a server whose k3s unit is active or not; it records the
// commands run, and the cluster reset fails with failure when set, after
// moving db/etcd aside as k3s does when moveFrom (the db dir) is set.
type fakeNode struct {
	active   bool
	failure  string
	failures int // the times failure is answered, then success (0: every time)
	moveFrom string
	ran      []string
	env      []string // the cluster reset's
	// config is k3s's config file; usedToken the token the cluster reset
	// ran with, found as k3s finds it: a config value (K3S_CONFIG_FILE's, or
	// config's, and their drop-ins) wins over K3S_TOKEN.
	config, usedToken string
}

func (f *fakeNode) Run(_ context.Context, env []string, name string, args ...string) (string, error) {
	cmd := filepath.Base(name) + " " + strings.Join(args, " ")
	if strings.HasPrefix(cmd, "systemctl show") {
		state := "inactive"
		if f.active {
			state = "active"
		}
		return "LoadState=loaded\nActiveState=" + state + "\nSubState=running\nUnitFileState=enabled\nNRestarts=0\n", nil
	}
	f.ran = append(f.ran, cmd)
	if strings.HasPrefix(cmd, "k3s server") {
		f.env = env
		config, token := f.config, ""
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "K3S_CONFIG_FILE="); ok {
				config = v
			}
			if v, ok := strings.CutPrefix(e, "K3S_TOKEN="); ok {
				token = v
			}
		}
		if configured := k3sconfig.FileValue(config, "token"); configured != "" {
			token = configured
		}
		f.usedToken = token
	}
	if strings.HasPrefix(cmd, "k3s server") && f.moveFrom != "" {
		if err := os.Rename(filepath.Join(f.moveFrom, "etcd"), filepath.Join(f.moveFrom, "etcd-old-1764910001")); err != nil {
			return "", err
		}
	}
	if strings.HasPrefix(cmd, "k3s server") && f.failure != "" {
		failure := f.failure
		if f.failures > 0 {
			if f.failures--; f.failures == 0 {
				f.failure = ""
			}
		}
		return "time=\"x\" level=fatal msg=\"Error: " + failure + "\"\n", errors.New("exit status 1")
	}
	return "", nil
}

func (f *fakeNode) Download(context.Context, string, k3snode.Proxy) ([]byte, error) {
	return nil, errors.New("no downloads")
}

func (f *fakeNode) Readyz(context.Context, string, int, []string) error { return nil }
func (f *fakeNode) Supervisor(context.Context, string, string, string, string, string, []byte) (int, string, error) {
	return 0, "", errors.New("no supervisor here")
}

func TestRun(t *testing.T) {
	at := time.Unix(1764910000, 0)
	for _, tc := range []struct {
		name    string
		args    map[string]any
		node    fakeNode
		ran     []string
		msg     string
		db      bool // the data dir holds server/db
		movedTo any
	}{
		{name: "stop a running server", args: map[string]any{"step": "stop"}, node: fakeNode{active: true}, ran: []string{"systemctl stop k3s.service"}},
		{name: "stop a stopped one: nothing", args: map[string]any{"step": "stop"}},
		{name: "reset: stop, then restore", args: map[string]any{"step": "reset", "snapshot": "pre-node1-1"}, node: fakeNode{active: true}, db: true,
			ran: []string{"systemctl stop k3s.service", "k3s server --cluster-reset --cluster-reset-restore-path=DATA/server/db/snapshots/pre-node1-1 --etcd-s3=false"}},
		{name: "reset: k3s's words", args: map[string]any{"step": "reset", "snapshot": "pre-node1-1"}, node: fakeNode{failure: "etcd: snapshot path does not exist"}, db: true,
			ran: []string{"k3s server --cluster-reset --cluster-reset-restore-path=DATA/server/db/snapshots/pre-node1-1 --etcd-s3=false", "systemctl disable k3s.service"},
			msg: "k3s server --cluster-reset --cluster-reset-restore-path=DATA/server/db/snapshots/pre-node1-1 --etcd-s3=false: etcd: snapshot path does not exist. k3s is stopped on every server, and disabled on this one (a reboot does not start it). k3s set nothing aside"},
		{name: "reset: a snapshot not there, naming those kept", args: map[string]any{"step": "reset", "snapshot": "gone"}, node: fakeNode{active: true}, db: true,
			msg: "snapshot DATA/server/db/snapshots/gone: no such file (kept in DATA/server/db/snapshots: pre-node1-1); nothing was changed"},
		{name: "reset: a path in a name", args: map[string]any{"step": "reset", "snapshot": "../token"}, db: true,
			msg: `snapshot must be a file name in DATA/server/db/snapshots or an absolute path, got "../token"`},
		{name: "rejoin: the data set aside", args: map[string]any{"step": "rejoin"}, node: fakeNode{active: true}, db: true,
			ran: []string{"systemctl stop k3s.service"}, movedTo: "DATA/server/db.pre-restore-1764910000"},
		{name: "rejoin: no data", args: map[string]any{"step": "rejoin"}, movedTo: ""},
		{name: "check mode runs nothing", args: map[string]any{"step": "rejoin", "_ansible_check_mode": true}, node: fakeNode{active: true}, db: true,
			movedTo: "DATA/server/db.pre-restore-1764910000"},
		{name: "a data dir not k3s's", args: map[string]any{"step": "rejoin", "data_dir": "/home/pi"}, node: fakeNode{active: true},
			msg: "data_dir /home/pi is not a directory k3s makes (its own name has k3s in it, as /var/lib/rancher/k3s); nothing was changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "k3s")
			if tc.db {
				require.NoError(t, os.MkdirAll(filepath.Join(data, "server", "db", "snapshots"), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(data, "server", "db", "snapshots", "pre-node1-1"), snapshotFor(testToken), 0o600))
				require.NoError(t, os.WriteFile(filepath.Join(data, "server", "token"), []byte(testToken+"\n"), 0o600))
			}
			if tc.args["data_dir"] == nil {
				tc.args["data_dir"] = data
			}
			h := host{Sys: &tc.node, BinDir: "/usr/local/bin", ConfigPath: filepath.Join(data, "no-config.yaml"), Now: func() time.Time { return at }}
			res, _, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, h)
			}, tc.args)
			fix := func(s string) string { return strings.ReplaceAll(s, "DATA", data) }
			var ran []string
			for _, r := range tc.ran {
				ran = append(ran, fix(r))
			}
			assert.Equal(t, ran, tc.node.ran)
			if tc.msg != "" {
				assert.True(t, strings.HasPrefix(res["msg"].(string), fix(tc.msg)), res["msg"])
				return
			}
			assert.Nil(t, res["failed"], res["msg"])
			if tc.movedTo != nil {
				assert.Equal(t, fix(tc.movedTo.(string)), res["moved_to"])
				_, err := os.Stat(filepath.Join(data, "server", "db"))
				assert.Equal(t, tc.movedTo == "" || tc.args["_ansible_check_mode"] == true, err == nil || !tc.db, "the db set aside only when run")
			}
		})
	}
}

// TestResetChecksFirst: a file that is no etcd snapshot is refused before
// anything stops; a name is looked for in k3s's etcd-snapshot-dir.
func TestResetChecksFirst(t *testing.T) {
	good := snapshotFor(testToken)
	for _, tc := range []struct {
		name     string
		snapshot string         // "FILE": the file written
		content  []byte         // the file's
		dir      string         // where it is written, under the test's directory
		config   string         // k3s's config.yaml
		args     map[string]any // more options
		ran      []string       // "" when refused
		msg      string         // the refusal
	}{
		{name: "/etc/passwd", snapshot: "FILE", content: []byte("root:x:0:0:root:/root:/bin/bash\n"), dir: "etc",
			msg: "snapshot T/etc/FILE is not an etcd snapshot k3s can restore: it does not start with a bbolt database (the magic 0xED0CDAED of etcd's database file); nothing was changed"},
		{name: "a copy cut short", snapshot: "FILE", content: good[:3*4096], dir: "copies",
			msg: "snapshot T/copies/FILE is not an etcd snapshot k3s can restore: it is cut short: its header counts 5 pages of 4096 bytes (20480 bytes) and etcd appends a 32-byte sha256, the file has 12288 bytes (a copy that stopped early?); nothing was changed"},
		{name: "a name in k3s's etcd-snapshot-dir", snapshot: "pre-node1-2", content: good, dir: "backups", config: "etcd-snapshot-dir: T/backups\n",
			ran: []string{"systemctl stop k3s.service", "k3s server --cluster-reset --cluster-reset-restore-path=T/backups/pre-node1-2 --etcd-s3=false"}},
		{name: "a name in snapshot_dir", snapshot: "pre-node1-2", content: good, dir: "mine", config: "etcd-snapshot-dir: T/backups\n",
			args: map[string]any{"snapshot_dir": "T/mine"},
			ran:  []string{"systemctl stop k3s.service", "k3s server --cluster-reset --cluster-reset-restore-path=T/mine/pre-node1-2 --etcd-s3=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fix := func(s string) string { return strings.ReplaceAll(s, "T/", root+"/") }
			require.NoError(t, os.MkdirAll(filepath.Join(root, tc.dir), 0o700))
			file := filepath.Join(root, tc.dir, tc.snapshot)
			if tc.snapshot == "FILE" {
				tc.snapshot = file
			}
			require.NoError(t, os.WriteFile(file, tc.content, 0o600))
			config := filepath.Join(root, "config.yaml")
			require.NoError(t, os.WriteFile(config, []byte(fix(tc.config)), 0o600))
			require.NoError(t, os.MkdirAll(filepath.Join(root, "k3s", "server"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(root, "k3s", "server", "token"), []byte(testToken), 0o600))
			args := map[string]any{"step": "reset", "snapshot": tc.snapshot, "data_dir": filepath.Join(root, "k3s")}
			for k, v := range tc.args {
				args[k] = fix(v.(string))
			}
			node := fakeNode{active: true}
			h := host{Sys: &node, BinDir: "/usr/local/bin", ConfigPath: config, Now: time.Now}
			res, _, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, h)
			}, args)
			if tc.msg != "" {
				assert.Equal(t, fix(tc.msg), res["msg"])
				assert.Empty(t, node.ran, "nothing stopped")
				return
			}
			assert.Nil(t, res["failed"], res["msg"])
			var ran []string
			for _, r := range tc.ran {
				ran = append(ran, fix(r))
			}
			assert.Equal(t, ran, node.ran)
		})
	}
}

// TestFailedResetLeavesTheMark: k3s's cluster reset failing says where k3s
// kept the data it had and how to retry or roll back, and leaves the mark
// k3s_node reads; a reset that succeeds removes it.
func TestFailedResetLeavesTheMark(t *testing.T) {
	data := filepath.Join(t.TempDir(), "k3s")
	db := filepath.Join(data, "server", "db")
	require.NoError(t, os.MkdirAll(filepath.Join(db, "etcd", "member"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(db, "etcd-old-1000"), 0o700)) // an older restore's, not this one's
	require.NoError(t, os.MkdirAll(filepath.Join(db, "snapshots"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(db, "snapshots", "pre-node1-1"), snapshotFor(testToken), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(data, "server", "token"), []byte(testToken), 0o600))
	mark := filepath.Join(db, "gitops.k3s_flux-restore-pending")
	run := func(node *fakeNode) map[string]any {
		h := host{Sys: node, BinDir: "/usr/local/bin", Now: func() time.Time { return time.Unix(1764910000, 0) }}
		res, _, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
			return run(ctx, req, h)
		}, map[string]any{"step": "reset", "snapshot": "pre-node1-1", "data_dir": data})
		return res
	}
	node := &fakeNode{active: true, failure: "etcd: no space left on device", moveFrom: db}
	res := run(node)
	assert.Equal(t, []string{"systemctl stop k3s.service", "k3s server --cluster-reset --cluster-reset-restore-path=" + db + "/snapshots/pre-node1-1 --etcd-s3=false", "systemctl disable k3s.service"}, node.ran,
		"disabled, so that a reboot does not start a new cluster on what is left")
	want := "k3s server --cluster-reset --cluster-reset-restore-path=DB/snapshots/pre-node1-1 --etcd-s3=false: etcd: no space left on device. " +
		"k3s is stopped on every server, and disabled on this one (a reboot does not start it). k3s moved the etcd data it had to DB/etcd-old-1764910001. " +
		"To retry: fix the cause, then run playbooks/restore.yml again after copying DB/etcd-old-1764910001 back to DB/etcd (k3s moves it aside again). " +
		"To roll back to the data as it was: on this server, mv DB/etcd-old-1764910001 DB/etcd, remove DB/gitops.k3s_flux-restore-pending and run playbooks/k8s.yml. " +
		"Until then DB/gitops.k3s_flux-restore-pending stays, and k3s_node (playbook k8s.yml) refuses to start k3s here: it would start a new, empty cluster. " +
		"abandon_restore (-e k8s_cluster_restore_abandon=true) starts it anyway"
	assert.Equal(t, strings.ReplaceAll(want, "DB", db), res["msg"])
	content, err := os.ReadFile(mark)
	require.NoError(t, err, "the mark is left")
	assert.Equal(t, "restore started at unix time 1764910000\n"+strings.ReplaceAll(want, "DB", db)+"\n", string(content))

	// A retry that fails again still names the data from before the first.
	require.NoError(t, os.MkdirAll(filepath.Join(db, "etcd-old-1764910002"), 0o700)) // the retry's move of a copy
	res = run(&fakeNode{failure: "etcd: no space left on device"})
	assert.Contains(t, res["msg"], "k3s moved the etcd data it had to "+db+"/etcd-old-1764910001 (the partial restores of the attempts since: "+db+"/etcd-old-1764910002)")

	res = run(&fakeNode{})
	assert.Nil(t, res["failed"], res["msg"])
	assert.NoFileExists(t, mark, "a restore that succeeds removes the mark")
}

// TestResetRetriesK3sOwnRace: k3s's defragmentation racing its own copy of
// the etcd directory is run again, twice at most, and said; any other
// failure is not.
func TestResetRetriesK3sOwnRace(t *testing.T) {
	pause := resetRetryPause
	resetRetryPause = time.Millisecond
	t.Cleanup(func() { resetRetryPause = pause })
	race := "failed to create temporary datastore client: open /var/lib/rancher/k3s/server/db/etcd/member/snap/db.tmp.456615407: no such file or directory"
	reset := "k3s server --cluster-reset --cluster-reset-restore-path=DB/snapshots/pre-node1-1 --etcd-s3=false"
	for _, tc := range []struct {
		name     string
		node     fakeNode
		resets   int
		failed   bool
		warnings int
	}{
		{name: "once, then restored", node: fakeNode{failure: race, failures: 1}, resets: 2, warnings: 1},
		{name: "twice, then restored", node: fakeNode{failure: race, failures: 2}, resets: 3, warnings: 2},
		{name: "three times: the failure stands", node: fakeNode{failure: race}, resets: 3, failed: true, warnings: 2},
		{name: "another failure is not run again", node: fakeNode{failure: "etcd: no space left on device"}, resets: 1, failed: true},
		{name: "the race's words without its file are not either", node: fakeNode{failure: "failed to create temporary datastore client: permission denied"}, resets: 1, failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "k3s")
			db := filepath.Join(data, "server", "db")
			require.NoError(t, os.MkdirAll(filepath.Join(db, "snapshots"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(db, "snapshots", "pre-node1-1"), snapshotFor(testToken), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(data, "server", "token"), []byte(testToken), 0o600))
			node := tc.node
			h := host{Sys: &node, BinDir: "/usr/local/bin", Now: func() time.Time { return time.Unix(1764910000, 0) }}
			res, _, _ := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, h)
			}, map[string]any{"step": "reset", "snapshot": "pre-node1-1", "data_dir": data})
			var resets []string
			for _, c := range node.ran {
				if strings.HasPrefix(c, "k3s server") {
					resets = append(resets, strings.ReplaceAll(c, db, "DB"))
				}
			}
			assert.Equal(t, slices.Repeat([]string{reset}, tc.resets), resets)
			assert.Equal(t, tc.failed, res["failed"] == true, res["msg"])
			warnings, _ := res["warnings"].([]any)
			assert.Len(t, warnings, tc.warnings)
			for _, w := range warnings {
				assert.Contains(t, w, "k3s's cluster reset failed on its own race (attempt ")
			}
			if mark := filepath.Join(db, "gitops.k3s_flux-restore-pending"); tc.failed {
				assert.FileExists(t, mark, "the mark after a failure")
			} else {
				assert.NoFileExists(t, mark, "no mark after a restore")
			}
		})
	}
}

func TestRestoreFailureNothingMoved(t *testing.T) {
	assert.Equal(t, "k3s: boom. k3s is stopped on every server, and disabled on this one (a reboot does not start it). k3s set nothing aside: /d/db/etcd is as it was (missing: k3s needs it to restore; put the etcd data back there). "+
		"To retry: fix the cause, then run playbooks/restore.yml again. To go back without the snapshot: remove /d/mark and run playbooks/k8s.yml. "+
		"Until then /d/mark stays, and k3s_node (playbook k8s.yml) refuses to start k3s here: it would start a new, empty cluster. abandon_restore (-e k8s_cluster_restore_abandon=true) starts it anyway",
		restoreFailure("k3s: boom", "/d/db", nil, false, "/d/mark"))
	assert.Contains(t, restoreFailure("k3s: boom", "/d/db", []string{"/d/db/etcd-old-5"}, true, "/d/mark"),
		"k3s moved the etcd data it had to /d/db/etcd-old-5 and left a partial restore in /d/db/etcd. To retry: fix the cause, then run playbooks/restore.yml again. To roll back to the data as it was: on this server, rm -rf /d/db/etcd, mv /d/db/etcd-old-5 /d/db/etcd, remove /d/mark")
}

// testToken is a token as k3s writes server/token.
const testToken = "K1093af2c61a0d5e6c3b4d2a5e0f1c9b8a7d6e5f4c3b2a1908f7e6d5c4b3a2f1e0d::server:6d0c1e8a3b4f5a6c7d8e9f0a1b2c3d4e"

// snapshotFor is an etcd snapshot holding the bootstrap data of token (its
// key, as written in etcd's database).
func snapshotFor(token string) []byte {
	db := etcdsnapshottest.BoltDB(4096, 5, nil)
	copy(db[4*4096+100:], bootstrapKey(k3snode.ClusterSecret(token)))
	return etcdsnapshottest.Snapshot(db)
}

// TestResetToken: the reset's token (the option, else the config's, else
// server/token) must have bootstrap data in the snapshot, checked before
// anything stops; the option goes to k3s in its environment, never on its
// command line or in the result.
func TestResetToken(t *testing.T) {
	const old = "K10aaaa::server:the-old-cluster-password"
	for _, tc := range []struct {
		name     string
		snapshot []byte
		own      string // server/token, "" for none
		config   string
		token    string
		refused  string
		env      []string
	}{
		{name: "the server's own token", snapshot: snapshotFor(testToken), own: testToken},
		{name: "a rebuilt cluster: another token", snapshot: snapshotFor(old), own: testToken,
			refused: "snapshot SNAP was taken on a cluster with another token than this server's own token (DATA/server/token): it holds no bootstrap data for it, and k3s would set the etcd data aside, then refuse it (\"bootstrap data already found and encrypted with different token\"). A cluster rebuilt from scratch has a new token: give the token of the cluster the snapshot was taken on (its server/token then, or k8s_cluster_token; role k8s_cluster: -e k8s_cluster_restore_token=...); nothing was changed"},
		{name: "the old token given", snapshot: snapshotFor(old), own: testToken, token: old, env: []string{"K3S_TOKEN=" + old}},
		{name: "its password alone", snapshot: snapshotFor(old), own: testToken, token: "the-old-cluster-password", env: []string{"K3S_TOKEN=the-old-cluster-password"}},
		{name: "a wrong one given", snapshot: snapshotFor(old), own: old, token: "K10aaaa::server:guess",
			refused: "snapshot SNAP was taken on a cluster with another token than the token given (token; role k8s_cluster: k8s_cluster_restore_token, else k8s_cluster_token)"},
		{name: "the config's token", snapshot: snapshotFor(old), own: testToken, config: "token: " + old + "\n"},
		{name: "none at all", snapshot: snapshotFor(old),
			refused: "DATA/server/token does not exist and no token was given: k3s restores a snapshot only with the token of the cluster it was taken on; give it (token; role k8s_cluster: -e k8s_cluster_restore_token=...); nothing was changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			data := filepath.Join(root, "k3s")
			snap := filepath.Join(data, "server", "db", "snapshots", "pre-node1-1")
			require.NoError(t, os.MkdirAll(filepath.Dir(snap), 0o700))
			require.NoError(t, os.WriteFile(snap, tc.snapshot, 0o600))
			if tc.own != "" {
				require.NoError(t, os.WriteFile(filepath.Join(data, "server", "token"), []byte(tc.own+"\n"), 0o600))
			}
			config := filepath.Join(root, "config.yaml")
			require.NoError(t, os.WriteFile(config, []byte(tc.config), 0o600))
			args := map[string]any{"step": "reset", "snapshot": "pre-node1-1", "data_dir": data}
			if tc.token != "" {
				args["token"] = tc.token
			}
			node := fakeNode{active: true}
			h := host{Sys: &node, BinDir: "/usr/local/bin", ConfigPath: config, Now: time.Now}
			res, _, raw := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, h)
			}, args)
			for _, secret := range []string{"the-old-cluster-password", "6d0c1e8a3b4f5a6c7d8e9f0a1b2c3d4e", "guess"} {
				assert.NotContains(t, raw, secret)
			}
			if tc.refused != "" {
				fix := strings.NewReplacer("SNAP", snap, "DATA", data)
				assert.True(t, strings.HasPrefix(res["msg"].(string), fix.Replace(tc.refused)), res["msg"])
				assert.Empty(t, node.ran, "nothing stopped")
				return
			}
			assert.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, []string{"systemctl stop k3s.service", "k3s server --cluster-reset --cluster-reset-restore-path=" + snap + " --etcd-s3=false"}, node.ran)
			assert.Equal(t, tc.env, node.env)
		})
	}
}

// TestResetTokenOverConfig: where k3s's config sets another token than the
// one given (a rotation since the snapshot), the config's would win over
// K3S_TOKEN; the reset runs with a private copy of the config and its
// drop-ins whose last drop-in sets the token given, removed afterwards.
func TestResetTokenOverConfig(t *testing.T) {
	const old = "K10aaaa::server:the-old-cluster-password"
	root := t.TempDir()
	data := filepath.Join(root, "k3s")
	snap := filepath.Join(data, "server", "db", "snapshots", "pre-node1-1")
	require.NoError(t, os.MkdirAll(filepath.Dir(snap), 0o700))
	require.NoError(t, os.WriteFile(snap, snapshotFor(old), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(data, "server", "token"), []byte(testToken+"\n"), 0o600))
	config := filepath.Join(root, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte("token: "+testToken+"\nnode-label: [a=b]\n"), 0o600))
	require.NoError(t, os.MkdirAll(config+".d", 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(config+".d", "90-mine.yaml"), []byte("token: "+testToken+"\n"), 0o600))
	tmp := t.TempDir()
	node := fakeNode{active: true, config: config}
	h := host{Sys: &node, BinDir: "/usr/local/bin", ConfigPath: config, Now: time.Now}
	res, _, raw := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		req.TmpDir = tmp
		return run(ctx, req, h)
	}, map[string]any{"step": "reset", "snapshot": "pre-node1-1", "data_dir": data, "token": old})
	assert.Nil(t, res["failed"], res["msg"])
	assert.NotContains(t, raw, "the-old-cluster-password")
	assert.Equal(t, old, node.usedToken, "k3s ran with the token given")
	require.Len(t, node.env, 2)
	assert.Equal(t, "K3S_TOKEN="+old, node.env[0])
	assert.True(t, strings.HasPrefix(node.env[1], "K3S_CONFIG_FILE="+tmp+"/k3s-config-"), node.env[1])
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the copy is removed")
	mine, err := os.ReadFile(filepath.Join(config+".d", "90-mine.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "token: "+testToken+"\n", string(mine), "the config itself is left alone")

	// The same token in the config: K3S_TOKEN alone, no copy.
	require.NoError(t, os.WriteFile(filepath.Join(config+".d", "90-mine.yaml"), []byte("token: "+old+"\n"), 0o600))
	node = fakeNode{active: true, config: config}
	h.Sys = &node
	res, _, _ = ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
		req.TmpDir = tmp
		return run(ctx, req, h)
	}, map[string]any{"step": "reset", "snapshot": "pre-node1-1", "data_dir": data, "token": old})
	assert.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, []string{"K3S_TOKEN=" + old}, node.env)
	assert.Equal(t, old, node.usedToken)
}

// TestContainsAny: a key split across the reader's blocks is found.
func TestContainsAny(t *testing.T) {
	content := strings.Repeat("x", 3<<20) + "/bootstrap/0123456789ab" + "tail"
	found, err := containsAny(iotest.HalfReader(strings.NewReader(content)), []string{"/bootstrap/0123456789ab"})
	require.NoError(t, err)
	assert.True(t, found)
	found, err = containsAny(strings.NewReader(content), []string{"/bootstrap/ffffffffffff"})
	require.NoError(t, err)
	assert.False(t, found)
}

// TestRejoinSetsAnotherClustersIdentityAside: a server that runs another
// cluster than the restored one (its token not the one given) has its
// certificates, credentials and tokens set aside with its etcd data; its
// own cluster's stay.
func TestRejoinSetsAnotherClustersIdentityAside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token string
		moved []string
	}{
		{name: "another cluster's", token: "K10aaaa::server:the-old-cluster-password", moved: []string{"tls", "cred", "token", "node-token"}},
		{name: "its own cluster's", token: "6d0c1e8a3b4f5a6c7d8e9f0a1b2c3d4e"},
		{name: "no token given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "k3s")
			server := filepath.Join(data, "server")
			for _, d := range []string{"db/etcd", "tls", "cred", "manifests"} {
				require.NoError(t, os.MkdirAll(filepath.Join(server, d), 0o700))
			}
			require.NoError(t, os.WriteFile(filepath.Join(server, "token"), []byte(testToken+"\n"), 0o600))
			require.NoError(t, os.Symlink("token", filepath.Join(server, "node-token")))
			args := map[string]any{"step": "rejoin", "data_dir": data}
			if tc.token != "" {
				args["token"] = tc.token
			}
			// The clock moves on while k3s stops: the names reported are the ones used.
			now := time.Unix(1764910000, 0)
			clock := func() time.Time { t := now; now = now.Add(3 * time.Second); return t }
			h := host{Sys: &fakeNode{active: true}, BinDir: "/usr/local/bin", Now: clock}
			res, _, raw := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, h)
			}, args)
			assert.Nil(t, res["failed"], res["msg"])
			assert.NotContains(t, raw, "the-old-cluster-password")
			require.IsType(t, []any{}, res["identity_moved_to"], "a list, empty when nothing was set aside")
			moved := res["identity_moved_to"].([]any)
			assert.Len(t, moved, len(tc.moved))
			for i, m := range tc.moved {
				assert.NoFileExists(t, filepath.Join(server, m))
				if i < len(moved) {
					assert.True(t, strings.HasPrefix(moved[i].(string), filepath.Join(server, m)+".pre-restore-"), moved[i])
					_, err := os.Lstat(moved[i].(string))
					assert.NoError(t, err, "set aside where the result says")
				}
			}
			assert.DirExists(t, res["moved_to"].(string), "the etcd data where the result says")
			assert.DirExists(t, filepath.Join(server, "manifests"), "the auto-deploy manifests stay")
			if len(tc.moved) == 0 {
				assert.DirExists(t, filepath.Join(server, "tls"))
			}
		})
	}
}
