package k3setcdrestore

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
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, Module)
}

func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, Module, ansibletest.BadInputs(Module, map[string]any{"step": "stop"}))
}

// fakeNode is a server whose k3s unit is active or not; it records the
// commands run, and the cluster reset fails with failure when set.
type fakeNode struct {
	active  bool
	failure string
	ran     []string
}

func (f *fakeNode) Run(_ context.Context, _ []string, name string, args ...string) (string, error) {
	cmd := filepath.Base(name) + " " + strings.Join(args, " ")
	if strings.HasPrefix(cmd, "systemctl show") {
		state := "inactive"
		if f.active {
			state = "active"
		}
		return "LoadState=loaded\nActiveState=" + state + "\nSubState=running\nUnitFileState=enabled\nNRestarts=0\n", nil
	}
	f.ran = append(f.ran, cmd)
	if strings.HasPrefix(cmd, "k3s server") && f.failure != "" {
		return "time=\"x\" level=fatal msg=\"Error: " + f.failure + "\"\n", errors.New("exit status 1")
	}
	return "", nil
}

func (f *fakeNode) Download(context.Context, string, k3snode.Proxy) ([]byte, error) {
	return nil, errors.New("no downloads")
}

func (f *fakeNode) Readyz(context.Context, string, int) error { return nil }

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
			ran: []string{"systemctl stop k3s.service", "k3s server --cluster-reset --cluster-reset-restore-path=DATA/server/db/snapshots/pre-node1-1"}},
		{name: "reset: k3s's words", args: map[string]any{"step": "reset", "snapshot": "pre-node1-1"}, node: fakeNode{failure: "etcd: snapshot path does not exist"}, db: true,
			ran: []string{"k3s server --cluster-reset --cluster-reset-restore-path=DATA/server/db/snapshots/pre-node1-1"},
			msg: "k3s server --cluster-reset --cluster-reset-restore-path=DATA/server/db/snapshots/pre-node1-1: etcd: snapshot path does not exist"},
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
				require.NoError(t, os.WriteFile(filepath.Join(data, "server", "db", "snapshots", "pre-node1-1"), []byte("x"), 0o600))
			}
			if tc.args["data_dir"] == nil {
				tc.args["data_dir"] = data
			}
			h := Host{Sys: &tc.node, BinDir: "/usr/local/bin", Now: func() time.Time { return at }}
			res, _, _ := ansibletest.Run(t, Module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return Run(ctx, req, h)
			}, tc.args)
			fix := func(s string) string { return strings.ReplaceAll(s, "DATA", data) }
			var ran []string
			for _, r := range tc.ran {
				ran = append(ran, fix(r))
			}
			assert.Equal(t, ran, tc.node.ran)
			if tc.msg != "" {
				assert.Equal(t, fix(tc.msg), res["msg"])
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
