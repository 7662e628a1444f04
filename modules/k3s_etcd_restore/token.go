package k3setcdrestore

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// k3s keeps the cluster's bootstrap data (its CAs, keys and passwords) in
// etcd under /bootstrap/<the first 12 hex digits of the sha256 of the
// token's password>, encrypted with that password (pkg/cluster/encrypt.go,
// keyHash; the password is the token's part after "::server:", or the
// whole token: pkg/util/token.go, NormalizeToken). A restore reads it with
// the token the reset runs with, after it replaced the etcd data, and
// stops on another one: "bootstrap data already found and encrypted with
// different token" (pkg/cluster/storage.go, getBootstrapKeyFromStorage).
// The key's name is in the snapshot as written, so the module finds out
// before anything stops.

// bootstrapKey is k3s's key for a token's bootstrap data.
func bootstrapKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "/bootstrap/" + hex.EncodeToString(sum[:])[:12]
}

// bootstrapKeys are the keys under which a cluster reset with token finds
// its bootstrap data: the password's, and the legacy ones k3s migrates
// (the whole token's, and the empty token's: storage.go migrateTokens).
func bootstrapKeys(token string) []string {
	return []string{bootstrapKey(k3snode.ClusterSecret(token)), bootstrapKey(token), bootstrapKey("")}
}

// resetToken is the token k3s's cluster reset runs with: the option, else
// k3s's config (a config value is a flag, which wins over K3S_TOKEN), else
// the server's own <data-dir>/server/token (pkg/cli/server/server.go);
// and where it came from, for the message.
func resetToken(option, configPath, dataDir string) (token, from string, err error) {
	if option != "" {
		return option, "the token given (token; role k8s_cluster: k8s_cluster_restore_token, else k8s_cluster_token)", nil
	}
	if configPath != "" {
		if t := k3sconfig.FileValue(configPath, "token"); t != "" {
			return t, "the token of k3s's config", nil
		}
	}
	path := filepath.Join(dataDir, "server", "token")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("%s does not exist and no token was given: k3s restores a snapshot only with the token of the cluster it was taken on; give it (token; role k8s_cluster: -e k8s_cluster_restore_token=...); nothing was changed", path)
	}
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w; nothing was changed", path, err)
	}
	return strings.TrimSpace(string(raw)), "this server's own token (" + path + ")", nil
}

// checkToken refuses a snapshot that holds no bootstrap data for token:
// k3s would replace the etcd data first, then refuse it.
func checkToken(path, token, from string) error {
	found, err := snapshotHolds(path, bootstrapKeys(token))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w; nothing was changed", path, err)
	}
	if !found {
		return fmt.Errorf("snapshot %s was taken on a cluster with another token than %s: it holds no bootstrap data for it, and k3s would set the etcd data aside, then refuse it (\"bootstrap data already found and encrypted with different token\"). A cluster rebuilt from scratch has a new token: give the token of the cluster the snapshot was taken on (its server/token then, or k8s_cluster_token; role k8s_cluster: -e k8s_cluster_restore_token=...); nothing was changed", path, from)
	}
	return nil
}

// snapshotHolds says whether the snapshot (unzipped, when its name ends
// in .zip) contains one of keys as written.
func snapshotHolds(path string, keys []string) (bool, error) {
	var r io.Reader
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.OpenReader(path)
		if err != nil {
			return false, err
		}
		defer z.Close()
		if len(z.File) != 1 {
			return false, fmt.Errorf("a zip archive of %d files", len(z.File))
		}
		f, err := z.File[0].Open()
		if err != nil {
			return false, err
		}
		defer f.Close()
		r = f
	} else {
		f, err := os.Open(path)
		if err != nil {
			return false, err
		}
		defer f.Close()
		r = f
	}
	return containsAny(r, keys)
}

// containsAny reads r in blocks, each searched with the end of the one
// before (a key split across two blocks is found too).
func containsAny(r io.Reader, keys []string) (bool, error) {
	longest := 0
	for _, k := range keys {
		longest = max(longest, len(k))
	}
	buf := make([]byte, 0, 1<<20+longest)
	block := make([]byte, 1<<20)
	for {
		n, err := r.Read(block)
		buf = append(buf, block[:n]...)
		for _, k := range keys {
			if bytes.Contains(buf, []byte(k)) {
				return true, nil
			}
		}
		if len(buf) > longest {
			buf = append(buf[:0], buf[len(buf)-longest:]...)
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// resetEnv is the environment of k3s's cluster reset with token: K3S_TOKEN
// (the flag's variable: never on a command line, which every user of the
// node can read). Where k3s's config sets another token, a config value is
// a flag and wins over K3S_TOKEN (pkg/configfilearg), so the config and its
// drop-ins are copied into a private directory under tmp with one more
// drop-in, last in k3s's order, that sets the token, and K3S_CONFIG_FILE
// points k3s at the copy (pkg/configfilearg, findConfigFileFlag; dotDFiles
// reads <file>.d). done removes the copy; the config itself is left alone.
func resetEnv(tmp, configPath, token string) (env []string, done func(), err error) {
	done = func() {}
	if token == "" {
		return nil, done, nil
	}
	env = []string{"K3S_TOKEN=" + token}
	configured := k3sconfig.FileValue(configPath, "token")
	if configured == "" || k3snode.ClusterSecret(configured) == k3snode.ClusterSecret(token) {
		return env, done, nil
	}
	dir, err := os.MkdirTemp(tmp, "k3s-config-")
	if err != nil {
		return nil, done, fmt.Errorf("make a private copy of k3s's config for the reset's token: %w", err)
	}
	done = func() { os.RemoveAll(dir) }
	dup := filepath.Join(dir, filepath.Base(configPath))
	if err := copyFile(configPath, dup); err != nil && !errors.Is(err, fs.ErrNotExist) {
		done()
		return nil, func() {}, fmt.Errorf("copy %s for the reset: %w", configPath, err)
	}
	if err := os.Mkdir(dup+".d", 0o700); err != nil {
		done()
		return nil, func() {}, fmt.Errorf("make a private copy of k3s's config for the reset's token: %w", err)
	}
	last := ""
	entries, _ := os.ReadDir(configPath + ".d")
	for _, e := range entries {
		name := strings.ToLower(e.Name())
		if e.IsDir() || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		if err := copyFile(filepath.Join(configPath+".d", e.Name()), filepath.Join(dup+".d", e.Name())); err != nil {
			done()
			return nil, func() {}, fmt.Errorf("copy %s for the reset: %w", filepath.Join(configPath+".d", e.Name()), err)
		}
		last = max(last, e.Name())
	}
	// Named after the last one, so that it sorts after every other (k3s reads them in name order).
	override := filepath.Join(dup+".d", last+"zz-restore-token.yaml")
	if err := os.WriteFile(override, []byte("token: "+strconv.Quote(token)+"\n"), 0o600); err != nil {
		done()
		return nil, func() {}, fmt.Errorf("write the reset's token into the private copy of k3s's config: %w", err)
	}
	return append(env, "K3S_CONFIG_FILE="+dup), done, nil
}

// copyFile copies a config file, readable by its owner alone (it may hold secrets).
func copyFile(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, raw, 0o600)
}
