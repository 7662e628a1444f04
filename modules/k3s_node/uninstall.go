package k3snodemodule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// uninstallScripts are the scripts k3s's installer leaves, in the order
// they run: an agent's, then a server's (a host moved between the roles
// may have both).
var uninstallScripts = []string{"k3s-agent-uninstall.sh", "k3s-uninstall.sh"}

// uninstall takes the node back to bare (state absent): k3s's own
// uninstall scripts, then whatever is left of its config directory and
// data directory.
func uninstall(ctx context.Context, req *ansible.Request, sys k3snode.System, where k3snode.Paths) (*ansible.Result, error) {
	version := k3snode.Version(ctx, sys, where)
	var scripts, actions []string
	for _, name := range uninstallScripts {
		path := filepath.Join(where.BinDir, name)
		if _, err := os.Stat(path); err == nil {
			scripts = append(scripts, path)
			actions = append(actions, "run "+path)
		}
	}
	if len(scripts) == 0 {
		if _, err := os.Stat(filepath.Join(where.BinDir, "k3s")); err == nil {
			return nil, fmt.Errorf("k3s is installed in %s but neither %s is there: it was not installed by k3s's script; uninstall it by hand", where.BinDir, strings.Join(uninstallScripts, " nor "))
		}
	}
	dirs := []struct{ option, dir string }{{"kubeconfig_path", filepath.Dir(where.Kubeconfig)}, {"data_dir", where.DataDir}}
	for _, d := range dirs {
		if !k3snode.K3sShaped(d.dir) {
			return nil, fmt.Errorf("%s: state=absent removes %s, which is not a directory k3s makes (/etc/rancher/k3s, /var/lib/rancher/k3s, or another whose own name has k3s in it, not a home directory); nothing was changed", d.option, d.dir)
		}
	}
	var left []string
	for _, dd := range dirs {
		d := dd.dir
		if _, err := os.Lstat(d); err == nil {
			left = append(left, d)
			actions = append(actions, "remove what is left of "+d)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("inspect %s: %w", d, err)
		}
	}
	res := &ansible.Result{Changed: len(actions) > 0}
	res.Set("previous_version", version)
	res.Set("version", "")
	res.Set("service", "")
	res.Set("actions", nonNil(actions))
	res.Set("restart_done", false)
	if !res.Changed {
		return res, nil
	}
	before := "k3s not installed\n"
	if version != "" {
		before = "k3s " + version + " installed\n"
	}
	res.Diff = []ansible.Diff{{Before: before, After: "k3s not installed, its config and data removed\n", BeforeHeader: "k3s on this node", AfterHeader: "k3s on this node"}}
	if req.CheckMode {
		return res, nil
	}
	for _, script := range scripts {
		if out, err := sys.Run(ctx, nil, "sh", script); err != nil {
			return res, fmt.Errorf("%s: %w: %s", script, err, k3snode.LastLines(out, 5))
		}
	}
	for _, d := range left {
		if err := os.RemoveAll(d); err != nil {
			return res, fmt.Errorf("remove %s: %w", d, err)
		}
	}
	return res, nil
}
