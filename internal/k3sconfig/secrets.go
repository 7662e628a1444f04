package k3sconfig

import (
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// FileSecrets lists the credential values in the k3s config at path and its
// drop-ins (path.d/*.yaml, *.yml), for a module that runs k3s to mask them
// in all it returns. A file that is missing or does not parse gives none.
func FileSecrets(path string) []string {
	files := []string{path}
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		more, _ := filepath.Glob(filepath.Join(path+".d", pattern))
		files = append(files, more...)
	}
	var out []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var doc any
		if yaml.Unmarshal(raw, &doc) == nil {
			out = append(out, secretConfigValues(doc)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
