package bed

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// versions.env pins the test bed's binaries; tests/tools/build.sh reads the
// same file and builds them into the cache.
//
//go:embed versions.env
var versionsEnv string

// Versions maps the names in versions.env to their values.
func Versions() map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(versionsEnv, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// CacheDir is where tests/tools/build.sh puts the binaries.
func CacheDir() string {
	if dir := os.Getenv("K3SF_CACHE"); dir != "" {
		return filepath.Join(dir, "bin")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "k3s_flux", "bin")
}

// toolDir is the cache directory of one tool at its pinned version.
func toolDir(tool, versionKey string) string {
	return filepath.Join(CacheDir(), tool+"-v"+Versions()[versionKey])
}

// binary returns the cached binary of a tool, or an error saying how to
// build it.
func binary(tool, versionKey string) (string, error) {
	path := filepath.Join(toolDir(tool, versionKey), tool)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("test bed binary %s missing: run `make testbed-bin` (tests/tools/build.sh) first", path)
	}
	return path, nil
}
