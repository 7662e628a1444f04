package k3setcdsnapshot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

func TestModuleFile(t *testing.T) {
	ansibletest.CheckModuleFile(t, module)
}

func TestBadInputs(t *testing.T) {
	ansibletest.CheckBadInputs(t, module, ansibletest.BadInputs(module, map[string]any{"name": "pre-upgrade"}))
}

const table = `Name                                   Location                                                                               Size    Created
etcd-snapshot-node1-1764892800         file:///var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-node1-1764892800         4300800 2026-12-05T00:00:00Z
pre-upgrade-v1.36.3-k3s1-node1-1764900000 file:///var/lib/rancher/k3s/server/db/snapshots/pre-upgrade-v1.36.3-k3s1-node1-1764900000 4321280 2026-12-05T02:00:00Z
`

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want []snapshot
	}{
		{name: "none", out: "Name Location Size Created\n", want: []snapshot{}},
		{name: "local ones, oldest first", out: table, want: []snapshot{
			{Name: "etcd-snapshot-node1-1764892800", Location: "file:///var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-node1-1764892800", Size: 4300800, Created: "2026-12-05T00:00:00Z"},
			{Name: "pre-upgrade-v1.36.3-k3s1-node1-1764900000", Location: "file:///var/lib/rancher/k3s/server/db/snapshots/pre-upgrade-v1.36.3-k3s1-node1-1764900000", Size: 4321280, Created: "2026-12-05T02:00:00Z"},
		}},
		{name: "k3s v1.27 on: S3's rows first at one time, each with its location", out: "Name Location Size Created\nb-node1-2 s3://snaps/k3s/b-node1-2 20 2026-12-05T02:00:00Z\nb-node1-2 file:///var/lib/rancher/k3s/server/db/snapshots/b-node1-2 20 2026-12-05T02:00:00Z\n", want: []snapshot{
			{Name: "b-node1-2", Location: "s3://snaps/k3s/b-node1-2", Size: 20, Created: "2026-12-05T02:00:00Z"},
			{Name: "b-node1-2", Location: "file:///var/lib/rancher/k3s/server/db/snapshots/b-node1-2", Size: 20, Created: "2026-12-05T02:00:00Z"},
		}},
		{name: "before k3s v1.27: S3's without a location, and a log line between", out: "Name Size Created\nb-node1-2 20 2026-12-05T02:00:00Z\ntime=x level=info msg=listing\na-node1-1 10 2026-12-05T01:00:00Z\n", want: []snapshot{
			{Name: "a-node1-1", Location: "s3", Size: 10, Created: "2026-12-05T01:00:00Z"},
			{Name: "b-node1-2", Location: "s3", Size: 20, Created: "2026-12-05T02:00:00Z"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parseList(tc.out))
		})
	}
}

func TestNewest(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	kept := []snapshot{
		{Name: "pre-upgrade-node1-1", Location: "file:///a", Created: "2026-12-05T01:00:00Z"},
		{Name: "pre-upgrade-node1-2", Location: "s3", Created: "2026-12-05T02:00:00Z"},
		{Name: "pre-upgrade-node1-2", Location: "s3://snapshots/k3s/pre-upgrade-node1-2", Created: "2026-12-05T02:00:00Z"},
		{Name: "pre-upgrade-node1-2", Location: "file:///b", Created: "2026-12-05T02:00:00Z"},
		{Name: "pre-upgrade-x-node1-3", Location: "file:///c", Created: "2026-12-05T01:59:59Z"},
		{Name: "other-node1-4", Location: "file:///d", Created: "2026-12-05T03:00:00Z"},
	}
	for _, tc := range []struct {
		name  string
		start time.Time
		want  string
		found bool
	}{
		{name: "the latest with the name, local before S3", start: at("2026-12-05T02:00:00.4Z"), want: "file:///b", found: true},
		{name: "k3s rounds the time: a second before counts", start: at("2026-12-05T02:00:00.9Z"), want: "file:///b", found: true},
		{name: "none since the start", start: at("2026-12-05T02:00:02Z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := newest(kept, "pre-upgrade", tc.start)
			assert.Equal(t, tc.found, found)
			assert.Equal(t, tc.want, got.Location)
		})
	}
}

// fakeK3s answers like k3s on a server: save adds a snapshot to what ls
// lists, unless fail says why it refuses.
type fakeK3s struct {
	kept  []string
	ran   []string
	fail  string
	saved bool
}

func (f *fakeK3s) host() host {
	now := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	return host{
		Now:     func() time.Time { return now },
		Secrets: func() []string { return []string{"s3-secret-value", "k10cluster-token"} },
		K3s: func(_ context.Context, args ...string) (string, error) {
			f.ran = append(f.ran, strings.Join(args, " "))
			if f.fail != "" {
				return "", errors.New(f.fail)
			}
			switch args[1] {
			case "save":
				if !f.saved {
					f.kept = append(f.kept, args[3]+"-node1-1764907200 file:///s/"+args[3]+"-node1-1764907200 100 2026-12-05T04:00:00Z")
				}
			case "ls":
				return "Name Location Size Created\n" + strings.Join(f.kept, "\n") + "\n", nil
			}
			return "", nil
		},
	}
}

func TestRun(t *testing.T) {
	old := "etcd-snapshot-node1-1 file:///s/etcd-snapshot-node1-1 90 2026-12-05T00:00:00Z"
	for _, tc := range []struct {
		name     string
		args     map[string]any
		k3s      fakeK3s
		ran      []string
		snapshot any
		kept     int
		msg      string
	}{
		{name: "takes one and lists them", args: map[string]any{"name": "pre-upgrade-v1.36.3-k3s1"}, k3s: fakeK3s{kept: []string{old}},
			ran: []string{"etcd-snapshot save --name pre-upgrade-v1.36.3-k3s1", "etcd-snapshot ls"}, kept: 2,
			snapshot: map[string]any{"name": "pre-upgrade-v1.36.3-k3s1-node1-1764907200", "location": "file:///s/pre-upgrade-v1.36.3-k3s1-node1-1764907200", "size": float64(100), "created": "2026-12-05T04:00:00Z"},
			msg:      "took etcd snapshot pre-upgrade-v1.36.3-k3s1-node1-1764907200 (file:///s/pre-upgrade-v1.36.3-k3s1-node1-1764907200)"},
		{name: "check mode only lists", args: map[string]any{"name": "pre-upgrade", "_ansible_check_mode": true}, k3s: fakeK3s{kept: []string{old}},
			ran: []string{"etcd-snapshot ls"}, kept: 1, msg: "would take an etcd snapshot named pre-upgrade-<node name>-<unix time>"},
		{name: "k3s refuses: its words, the secrets in them masked", args: map[string]any{"name": "pre-upgrade"},
			k3s: fakeK3s{fail: "failed to initialize S3 client: secret s3-secret-value refused"},
			ran: []string{"etcd-snapshot save --name pre-upgrade"},
			msg: "k3s etcd-snapshot save --name pre-upgrade: failed to initialize S3 client: secret ******** refused"},
		{name: "saved but not listed", args: map[string]any{"name": "pre-upgrade"}, k3s: fakeK3s{kept: []string{old}, saved: true},
			ran: []string{"etcd-snapshot save --name pre-upgrade", "etcd-snapshot ls"},
			msg: "k3s etcd-snapshot save --name pre-upgrade succeeded, but k3s etcd-snapshot ls lists no snapshot pre-upgrade-<node name>-<time> taken since 2026-12-05T04:00:00Z"},
		{name: "a name k3s cannot make a file of", args: map[string]any{"name": "../Pre upgrade"},
			msg: `name must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 100 characters (k3s makes a file and an object name of it), got "../Pre upgrade"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.k3s.host()
			res, _, raw := ansibletest.Run(t, module, func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
				return run(ctx, req, host)
			}, tc.args)
			assert.Equal(t, tc.msg, res["msg"])
			assert.Equal(t, tc.ran, tc.k3s.ran)
			assert.Equal(t, tc.snapshot, res["snapshot"])
			if tc.kept > 0 {
				require.Len(t, res["snapshots"], tc.kept)
			}
			assert.NotContains(t, raw, "s3-secret-value")
			assert.NotContains(t, raw, "k10cluster-token")
		})
	}
}
