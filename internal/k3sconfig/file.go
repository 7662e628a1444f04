package k3sconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
)

// fileMode is the only mode a k3s config file gets: it holds the token.
const fileMode fs.FileMode = 0o600

// current is what is on disk at the target path.
type current struct {
	Exists    bool
	Content   []byte
	Mode      fs.FileMode
	UID, GID  int
	WrongPerm bool // mode or owner differs from 0600 root:root
}

// readCurrent reads the target, refusing anything but a regular file.
func readCurrent(path string) (current, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return current{}, nil
	}
	if err != nil {
		return current{}, fmt.Errorf("inspect %s: %w", path, err)
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return current{}, fmt.Errorf("%s is a symlink: k3s_config replaces the file atomically and will not write through a link; point path at the real file", path)
	case info.IsDir():
		return current{}, fmt.Errorf("%s is a directory, not a config file", path)
	case !info.Mode().IsRegular():
		return current{}, fmt.Errorf("%s is not a regular file (%s)", path, info.Mode().Type())
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return current{}, fmt.Errorf("read %s: %w", path, err)
	}
	c := current{Exists: true, Content: content, Mode: info.Mode().Perm()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		c.UID, c.GID = int(st.Uid), int(st.Gid)
	}
	c.WrongPerm = c.Mode != fileMode || (os.Geteuid() == 0 && (c.UID != 0 || c.GID != 0))
	return c, nil
}

// fixPermissions sets 0600 root:root on an existing file whose content is
// already right.
func fixPermissions(path string) error {
	if err := os.Chmod(path, fileMode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(path, 0, 0); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
	}
	return nil
}

// remove deletes path and fsyncs its directory.
func remove(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}
