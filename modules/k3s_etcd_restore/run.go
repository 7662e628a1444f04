package k3setcdrestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
	k3setcdsnapshot "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_etcd_snapshot"
)

// Host is what Run needs of the node.
type Host struct {
	Sys    k3snode.System
	BinDir string
	Now    func() time.Time
}

type args struct {
	Step     string `json:"step"`
	Snapshot string `json:"snapshot"`
	DataDir  string `json:"data_dir"`
	Timeout  int    `json:"timeout"`
}

// Run carries out the node's step (nothing in check mode).
func Run(ctx context.Context, req *ansible.Request, h Host) (*ansible.Result, error) {
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
		if path, err = SnapshotPath(a.DataDir, a.Snapshot); err != nil {
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
	switch a.Step {
	case "reset":
		res.Set("path", path)
	case "rejoin":
		if _, err := os.Stat(db); err == nil {
			aside = fmt.Sprintf("%s.pre-restore-%d", db, h.Now().Unix())
		}
		res.Set("moved_to", aside)
		res.Changed = running || aside != ""
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
		ctx, cancel := context.WithTimeout(ctx, time.Duration(a.Timeout)*time.Second)
		defer cancel()
		out, err := h.Sys.Run(ctx, nil, filepath.Join(h.BinDir, "k3s"), "server", "--cluster-reset", "--cluster-reset-restore-path="+path)
		if err != nil {
			return nil, fmt.Errorf("k3s server --cluster-reset --cluster-reset-restore-path=%s: %s", path, k3setcdsnapshot.FatalMessage(out, err))
		}
	case "rejoin":
		if aside != "" {
			if err := os.Rename(db, aside); err != nil {
				return nil, fmt.Errorf("set the etcd data aside: %w", err)
			}
		}
	}
	return res, nil
}

// SnapshotPath is the snapshot's file: an absolute path as it is, a name in
// the snapshot directory; a missing one is refused naming those there.
func SnapshotPath(dataDir, snapshot string) (string, error) {
	dir := filepath.Join(dataDir, "server", "db", "snapshots")
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
