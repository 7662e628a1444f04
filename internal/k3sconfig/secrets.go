package k3sconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// readFiles reads the k3s config at path and its drop-ins (path.d/*.yaml,
// *.yml, in k3s's order), each as a YAML document; a file that is missing
// or does not parse is left out.
func readFiles(path string) []any {
	return readDocs(configFiles(path))
}

// configFiles are the k3s config at path, then its drop-ins in the order
// k3s reads them.
func configFiles(path string) []string {
	var dropins []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		more, _ := filepath.Glob(filepath.Join(path+".d", pattern))
		dropins = append(dropins, more...)
	}
	slices.Sort(dropins)
	return append([]string{path}, dropins...)
}

// readDocs parses the files that are there and hold YAML.
func readDocs(files []string) []any {
	var docs []any
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var doc any
		if yaml.Unmarshal(raw, &doc) == nil && doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

// FileSecrets lists the credential values in the k3s config at path and its
// drop-ins, for a module that runs k3s to mask them in all it returns.
func FileSecrets(path string) []string {
	var out []string
	for _, doc := range readFiles(path) {
		out = append(out, configSecretValues(doc)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FileList is a list-valued key's values in the k3s config at path and its
// drop-ins, as k3s merges them (pkg/configfilearg): a later file's key
// replaces the values so far, its "key+" appends to them; a string value
// holds values separated by commas. Nil when none sets it.
func FileList(path, key string) []string {
	var values []string
	for _, doc := range readFiles(path) {
		m, ok := doc.(map[string]any)
		if !ok {
			continue
		}
		if v, ok := m[key]; ok {
			values = listValues(v)
		}
		if v, ok := m[key+"+"]; ok {
			values = append(values, listValues(v)...)
		}
	}
	return values
}

func listValues(v any) []string {
	var raw []string
	switch v := v.(type) {
	case []any:
		for _, item := range v {
			raw = append(raw, fmt.Sprint(item))
		}
	case nil:
	default:
		raw = []string{fmt.Sprint(v)}
	}
	var out []string
	for _, r := range raw {
		for _, part := range strings.Split(r, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// FileValue is a top-level key's value in the k3s config at path and its
// drop-ins, the last file's winning as in k3s; empty when none sets it.
func FileValue(path, key string) string {
	return lastValue(readFiles(path), key)
}

// DropInValue is FileValue of path's drop-ins alone (path.d/*.yaml), which
// module k3s_config leaves to the user.
func DropInValue(path, key string) string {
	return lastValue(readDocs(configFiles(path)[1:]), key)
}

func lastValue(docs []any, key string) string {
	value := ""
	for _, doc := range docs {
		if m, ok := doc.(map[string]any); ok && m[key] != nil {
			value = fmt.Sprint(m[key])
		}
	}
	return value
}
