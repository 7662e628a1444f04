// Package atomicfile replaces files so that a reader sees either the old
// file or the whole new one, never part of it, and a failure or a kill
// leaves nothing half-written behind.
package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Write replaces path with what r yields: a temp file beside it, written
// with mode from the start (it may hold a token), root-owned when running
// as root, fsynced, renamed over the target, then the directory fsynced.
// A failure leaves the old file untouched and no temp file behind.
func Write(path string, r io.Reader, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if os.Geteuid() == 0 {
		if err := tmp.Chown(0, 0); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if _, err := io.Copy(tmp, r); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	removeStaleTemps(path)
	return SyncDir(dir)
}

// Backup copies the old content of path beside it, named as Ansible's
// backup_local names backups (<path>.<pid>.<timestamp>~), with mode, and
// returns its name.
func Backup(path string, content []byte, mode fs.FileMode) (string, error) {
	name := fmt.Sprintf("%s.%d.%s~", path, os.Getpid(), time.Now().Format("2006-01-02@15:04:05"))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
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

// tempPrefix names the temp files of path: hidden, beside it, so the
// rename stays on one filesystem.
func tempPrefix(path string) string {
	return "." + filepath.Base(path) + ".tmp-"
}

// removeStaleTemps removes the temp files of earlier runs that were killed
// before their rename: they may hold a token and nothing will use them.
func removeStaleTemps(path string) {
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPrefix(path)+"*"))
	for _, f := range stale {
		_ = os.Remove(f)
	}
}

// SyncDir fsyncs a directory, so a rename or removal in it survives a
// power loss.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
