package k3setcdrestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/etcdsnapshot"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// host is what Run needs of the node.
type host struct {
	Sys        k3snode.System
	BinDir     string
	ConfigPath string // k3s's config file, whose etcd-snapshot-dir k3s saves snapshots in
	Now        func() time.Time
}

type args struct {
	Step        string `json:"step"`
	Snapshot    string `json:"snapshot"`
	SnapshotDir string `json:"snapshot_dir"`
	DataDir     string `json:"data_dir"`
	Timeout     int    `json:"timeout"`
	Token       string `json:"token"`
}

// run carries out the node's step (nothing in check mode).
func run(ctx context.Context, req *ansible.Request, h host) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if !k3snode.K3sShaped(a.DataDir) {
		return nil, fmt.Errorf("data_dir %s is not a directory k3s makes (its own name has k3s in it, as /var/lib/rancher/k3s); nothing was changed", a.DataDir)
	}
	path := ""
	if a.Step == "reset" {
		var err error
		if path, err = checkBeforeReset(req, h, a); err != nil {
			return nil, err
		}
	}
	unit, err := k3snode.Unit(ctx, h.Sys, "k3s")
	if err != nil {
		return nil, err
	}
	running := unit.ActiveState == "active" || unit.ActiveState == "activating" || unit.ActiveState == "reloading"
	res := &ansible.Result{Changed: running || a.Step != "stop"}
	res.Set("stopped", running)
	db := filepath.Join(a.DataDir, "server", "db")
	aside := ""
	var identity, movedIdentity []string // what is set aside, and where: named once, before k3s stops
	switch a.Step {
	case "reset":
		res.Set("path", path)
	case "rejoin":
		if _, err := os.Stat(db); err == nil {
			aside = fmt.Sprintf("%s.pre-restore-%d", db, h.Now().Unix())
		}
		res.Set("moved_to", aside)
		identity = otherClusterIdentity(a.DataDir, a.Token)
		movedIdentity = []string{}
		for _, p := range identity {
			movedIdentity = append(movedIdentity, fmt.Sprintf("%s.pre-restore-%d", p, h.Now().Unix()))
		}
		res.Set("identity_moved_to", movedIdentity)
		res.Changed = running || aside != "" || len(identity) > 0
	}
	if req.CheckMode {
		return res, nil
	}
	if running {
		if out, err := h.Sys.Run(ctx, nil, "systemctl", "stop", "k3s.service"); err != nil {
			return nil, fmt.Errorf("systemctl stop k3s: %w: %s", err, k3snode.LastLines(out, 5))
		}
	}
	switch a.Step {
	case "reset":
		return res, reset(ctx, req, h, a, path)
	case "rejoin":
		if aside != "" {
			if err := os.Rename(db, aside); err != nil {
				return nil, fmt.Errorf("set the etcd data aside: %w", err)
			}
		}
		for i, p := range identity {
			if err := os.Rename(p, movedIdentity[i]); err != nil {
				return nil, fmt.Errorf("set the other cluster's %s aside: %w", filepath.Base(p), err)
			}
		}
	}
	return res, nil
}

// otherClusterIdentity is what a server keeps of another cluster than the
// one the snapshot restores, when its own token is not token (every
// server rebuilt from scratch: k3s made a new cluster, CA and token): its
// certificates, credentials and token files. k3s would refuse the join
// with them (their CA is not the restored cluster's, and files newer than
// the datastore stop it: pkg/cluster/bootstrap.go, ReconcileBootstrapData),
// and module k3s_node would refuse the token; set aside, the server gets
// the restored cluster's from the first one when it joins. Empty when the
// token is not given or is the server's own.
func otherClusterIdentity(dataDir, token string) []string {
	if token == "" {
		return nil
	}
	server := filepath.Join(dataDir, "server")
	raw, err := os.ReadFile(filepath.Join(server, "token"))
	if err != nil || k3snode.ClusterSecret(strings.TrimSpace(string(raw))) == k3snode.ClusterSecret(token) {
		return nil
	}
	var found []string
	for _, name := range []string{"tls", "cred", "token", "node-token", "agent-token"} {
		if _, err := os.Lstat(filepath.Join(server, name)); err == nil {
			found = append(found, filepath.Join(server, name))
		}
	}
	return found
}

// checkBeforeReset finds the snapshot and refuses, before anything stops,
// one k3s would fail on after setting the etcd data aside: not an etcd
// snapshot, or taken under another token than the reset's.
func checkBeforeReset(req *ansible.Request, h host, a args) (string, error) {
	path, err := snapshotPath(snapshotDir(a.DataDir, a.SnapshotDir, h.ConfigPath), a.Snapshot)
	if err != nil {
		return "", err
	}
	if err := etcdsnapshot.Check(path); err != nil {
		return "", err
	}
	token, from, err := resetToken(a.Token, h.ConfigPath, a.DataDir)
	if err != nil {
		return "", err
	}
	for _, secret := range []string{token, k3snode.ClusterSecret(token)} {
		if secret != "" {
			req.AddSecret(secret)
		}
	}
	return path, checkToken(path, token, from)
}

// reset runs k3s's cluster reset with the snapshot. A failure leaves the
// restore mark, for k3s_node not to start a new cluster here; a success
// removes it.
func reset(ctx context.Context, req *ansible.Request, h host, a args, path string) error {
	db := filepath.Join(a.DataDir, "server", "db")
	mark := k3snode.RestoreMark(a.DataDir)
	started := markStarted(mark, h.Now().Unix())
	ctx, cancel := context.WithTimeout(ctx, time.Duration(a.Timeout)*time.Second)
	defer cancel()
	args := resetArgs(path)
	env, done, err := resetEnv(req.TmpDir, h.ConfigPath, a.Token)
	if err != nil {
		return err
	}
	defer done()
	var out string
	for attempt := 1; ; attempt++ {
		out, err = h.Sys.Run(ctx, env, filepath.Join(h.BinDir, "k3s"), args...)
		if err == nil || attempt == resetAttempts || !defragRace(out) {
			break
		}
		req.Warn("k3s's cluster reset failed on its own race (attempt %d of %d: %s), not on the snapshot; running it again",
			attempt, resetAttempts, k3snode.FatalMessage(out, err))
		// k3s's own race, not the snapshot's fault: the same command again restores from the
		// untouched snapshot file (k3s moves the partial restore aside first), once the clock has
		// moved past the second its etcd-old-<unix time> directory is named after.
		select {
		case <-time.After(resetRetryPause):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err == nil {
		if err := os.Remove(mark); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the snapshot was restored, but its mark %s stays: %w", mark, err)
		}
		return nil
	}
	// What k3s moved aside since the first failed attempt: the oldest holds
	// the data from before it, the others the partial restores of retries.
	var moved []string
	for _, d := range oldEtcdDirs(db) {
		if t, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(d), "etcd-old-"), 10, 64); err == nil && t >= started {
			moved = append(moved, d)
		}
	}
	// The unit stays enabled after a failed reset: a reboot would start k3s
	// with cluster-init on what is left, a new cluster. Disabled, nothing
	// starts it but k3s_node, which the mark stops (and which enables it).
	disabled := ""
	if out, derr := h.Sys.Run(ctx, nil, "systemctl", "disable", "k3s.service"); derr != nil {
		disabled = fmt.Sprintf(" (disabling k3s.service failed: %v: %s)", derr, k3snode.LastLines(out, 5))
	}
	_, etcdErr := os.Stat(filepath.Join(db, "etcd"))
	msg := restoreFailure(fmt.Sprintf("k3s %s: %s", strings.Join(args, " "), k3snode.FatalMessage(out, err)),
		db, moved, etcdErr == nil, mark) + disabled
	if werr := os.WriteFile(mark, fmt.Appendf(nil, "%s%d\n%s\n", markStartedPrefix, started, msg), 0o600); werr != nil {
		msg += fmt.Sprintf(" (writing the mark failed: %v)", werr)
	}
	return errors.New(msg)
}

// resetAttempts is how many times a cluster reset is run when it fails on
// defragRace; resetRetryPause is the pause between them.
const resetAttempts = 3

var resetRetryPause = 2 * time.Second

// defragRace tells whether a cluster reset's output is k3s's own race, which
// a machine under load meets now and then: during --cluster-reset two of its
// goroutines each defragment etcd (pkg/etcd/etcd.go Reset's poll and
// pkg/executor/embed.go's test loop, both ETCD.Test(ctx, true)), and the
// first copies the etcd directory (pkg/etcd/store NewTemporaryStore, from
// storageBootstrap) while the other's defragmentation renames its
// member/snap/db.tmp.<n> file away: "failed to create temporary datastore
// client: open .../db.tmp.<n>: no such file or directory".
func defragRace(out string) bool {
	return strings.Contains(out, "failed to create temporary datastore client") &&
		strings.Contains(out, "no such file or directory") &&
		(strings.Contains(out, "/member/snap/db.tmp.") || strings.Contains(out, "/etcd-tmp/"))
}

// resetArgs is k3s's cluster reset from the snapshot file at path. With
// etcd-s3 on in k3s's config the restore path is a key in the bucket, not a
// file (pkg/etcd/etcd.go, Reset: "Retrieving etcd snapshot %s from S3"),
// so S3 is turned off for this one run, as k3s documents for a local
// snapshot; the config's later runs keep it.
func resetArgs(path string) []string {
	return []string{"server", "--cluster-reset", "--cluster-reset-restore-path=" + path, "--etcd-s3=false"}
}

// markStartedPrefix begins the mark's first line: when the first failed
// restore started (a retry's failure keeps it, to name the data from before).
const markStartedPrefix = "restore started at unix time "

func markStarted(mark string, now int64) int64 {
	raw, err := os.ReadFile(mark)
	if err != nil {
		return now
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	if t, err := strconv.ParseInt(strings.TrimPrefix(first, markStartedPrefix), 10, 64); err == nil && strings.HasPrefix(first, markStartedPrefix) {
		return t
	}
	return now
}

// restoreFailure is the message of a failed cluster reset: k3s's words,
// then where k3s kept the data it had (it renames <db>/etcd to
// <db>/etcd-old-<unix time> before it restores, pkg/etcd/etcd.go Restore),
// how to retry, how to roll back, and the mark that stops k3s_node from
// starting a new cluster here meanwhile.
func restoreFailure(k3sMsg, db string, moved []string, etcdThere bool, mark string) string {
	etcd := filepath.Join(db, "etcd")
	var b strings.Builder
	fmt.Fprintf(&b, "%s. k3s is stopped on every server, and disabled on this one (a reboot does not start it). ", k3sMsg)
	if len(moved) == 0 {
		fmt.Fprintf(&b, "k3s set nothing aside: %s is as it was", etcd)
		if !etcdThere {
			b.WriteString(" (missing: k3s needs it to restore; put the etcd data back there)")
		}
		fmt.Fprintf(&b, ". To retry: fix the cause, then run playbooks/restore.yml again. To go back without the snapshot: remove %s and run playbooks/k8s.yml", mark)
	} else {
		old := moved[0]
		fmt.Fprintf(&b, "k3s moved the etcd data it had to %s", old)
		if len(moved) > 1 {
			fmt.Fprintf(&b, " (the partial restores of the attempts since: %s)", strings.Join(moved[1:], ", "))
		}
		if etcdThere {
			fmt.Fprintf(&b, " and left a partial restore in %s", etcd)
		}
		b.WriteString(". To retry: fix the cause, then run playbooks/restore.yml again")
		if !etcdThere {
			fmt.Fprintf(&b, " after copying %s back to %s (k3s moves it aside again)", old, etcd)
		}
		b.WriteString(". To roll back to the data as it was: on this server, ")
		if etcdThere {
			fmt.Fprintf(&b, "rm -rf %s, ", etcd)
		}
		fmt.Fprintf(&b, "mv %s %s, remove %s and run playbooks/k8s.yml", old, etcd, mark)
	}
	fmt.Fprintf(&b, ". Until then %s stays, and k3s_node (playbook k8s.yml) refuses to start k3s here: it would start a new, empty cluster. abandon_restore (-e k8s_cluster_restore_abandon=true) starts it anyway", mark)
	return b.String()
}

// oldEtcdDirs lists the etcd data k3s set aside in db, oldest first.
func oldEtcdDirs(db string) []string {
	found, _ := filepath.Glob(filepath.Join(db, "etcd-old-*"))
	slices.SortFunc(found, func(a, b string) int {
		return cmpNumeric(strings.TrimPrefix(filepath.Base(a), "etcd-old-"), strings.TrimPrefix(filepath.Base(b), "etcd-old-"))
	})
	return found
}

// cmpNumeric orders unix times written in decimal.
func cmpNumeric(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// snapshotDir is where k3s keeps snapshots: the option, else the k3s
// config's etcd-snapshot-dir, else <data_dir>/server/db/snapshots
// (pkg/etcd/snapshot.go snapshotDir).
func snapshotDir(dataDir, option, configPath string) string {
	if option != "" {
		return option
	}
	if configPath != "" {
		if dir := k3sconfig.FileValue(configPath, "etcd-snapshot-dir"); dir != "" {
			return dir
		}
	}
	return filepath.Join(dataDir, "server", "db", "snapshots")
}

// snapshotPath is the snapshot's file: an absolute path as it is, a name in
// the snapshot directory dir; a missing one is refused naming those there.
func snapshotPath(dir, snapshot string) (string, error) {
	path := snapshot
	if !filepath.IsAbs(snapshot) {
		if filepath.Base(snapshot) != snapshot || snapshot == "." || snapshot == ".." {
			return "", fmt.Errorf("snapshot must be a file name in %s or an absolute path, got %q", dir, snapshot)
		}
		path = filepath.Join(dir, snapshot)
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		kept, _ := os.ReadDir(dir)
		var names []string
		for _, k := range kept {
			if !k.IsDir() {
				names = append(names, k.Name())
			}
		}
		slices.Sort(names)
		there := "none"
		if len(names) > 0 {
			there = strings.Join(names, ", ")
		}
		return "", fmt.Errorf("snapshot %s: no such file (kept in %s: %s); nothing was changed", path, dir, there)
	}
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("snapshot %s is not a file; nothing was changed", path)
	}
	return path, nil
}
