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
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
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

// tokenPassword is the password of a token, as k3s's NormalizeToken
// reads it: K10<ca hash>::<user>:<password>, else the whole token.
func tokenPassword(token string) string {
	if rest, ok := strings.CutPrefix(token, "K10"); ok {
		if _, creds, ok := strings.Cut(rest, "::"); ok {
			if _, password, ok := strings.Cut(creds, ":"); ok {
				return password
			}
		}
	}
	return token
}

// bootstrapKeys are the keys under which a cluster reset with token finds
// its bootstrap data: the password's, and the legacy ones k3s migrates
// (the whole token's, and the empty token's: storage.go migrateTokens).
func bootstrapKeys(token string) []string {
	return []string{bootstrapKey(tokenPassword(token)), bootstrapKey(token), bootstrapKey("")}
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
