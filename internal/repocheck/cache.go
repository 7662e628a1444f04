package repocheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
	"github.com/gitops-k3s-flux/k3s_flux/internal/fluxsource"
)

// A clean report is kept per repository under the cache directory, keyed
// by everything the check reads: every file's path and whether the
// artifact keeps it, the content of each kept file, the FluxInstance, the
// options, and the binary that checked. An idempotent re-run of the play
// with an unchanged repository then skips the builds (0.3 s for the test
// bed's four Kustomizations, most of it kustomize loading its OpenAPI
// schema for each build). A clean report keeps its warnings, shown again.

type cached struct {
	Key    string `json:"key"`
	Report Report `json:"report"`
}

// cacheKey hashes what the check reads.
func cacheKey(o Options, files []fluxsource.File) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "repocheck v3\n%s\n%q\n%q\n%q\n%q\n%t\n", executableStamp(), o.Secrets, o.ConfigMaps, o.KnownHosts, o.InstanceFile, o.HostNetwork)
	h.Write(o.Instance)
	for _, f := range files {
		fmt.Fprintf(h, "\n%s %t\n", f.Path, f.Excluded)
		if f.Excluded {
			continue
		}
		file, err := os.Open(filepath.Join(o.Root, filepath.FromSlash(f.Path)))
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, file)
		file.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// executableStamp tells one build of the checking binary from another.
func executableStamp() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	info, err := os.Stat(exe)
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%s %d %d", exe, info.Size(), info.ModTime().UnixNano())
}

// cacheFile is the one file kept for the repository at root.
func cacheFile(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".json")
}

// fromCache returns the kept report when its key matches.
func fromCache(dir, root, key string) (*Report, bool) {
	raw, err := os.ReadFile(cacheFile(dir, root))
	if err != nil {
		return nil, false
	}
	var c cached
	if json.Unmarshal(raw, &c) != nil || c.Key != key {
		return nil, false
	}
	c.Report.Cached = true
	return &c.Report, true
}

// toCache keeps a clean report (0600, in a 0700 directory); a failure to
// keep it only costs the next run the builds.
func toCache(dir, root, key string, r *Report) {
	raw, err := json.Marshal(cached{Key: key, Report: *r})
	if err != nil || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	_ = atomicfile.Write(cacheFile(dir, root), bytes.NewReader(raw), 0o600)
}
