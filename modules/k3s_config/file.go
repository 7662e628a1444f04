package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

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

// backup copies the old file beside it, named as Ansible's backup_local
// names backups: <path>.<pid>.<timestamp>~, with the same 0600 mode.
func backup(path string, content []byte) (string, error) {
	name := fmt.Sprintf("%s.%d.%s~", path, os.Getpid(), time.Now().Format("2006-01-02@15:04:05"))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return "", fmt.Errorf("back up %s: %w", path, err)
	}
	if _, err := f.Write(content); err != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return "", fmt.Errorf("back up %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("back up %s: %w", path, err)
	}
	return name, nil
}

// remove deletes path and fsyncs its directory.
func remove(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}
