package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sflags"
)

// entry is one key of the merged config: its values in order.
type entry struct {
	key    string
	values []string
	list   bool
}

// loadConfig reads config.yaml and its config.yaml.d drop-ins as k3s's
// pkg/configfilearg does: the main file first (it may be missing when a
// drop-in exists), then each *.yaml/*.yml drop-in in lexical order; a plain
// key replaces, "key+" appends. It returns the keys in order of first
// appearance; ok is false when there is no config at all.
func loadConfig(path string) (entries []entry, ok bool, err error) {
	files := []string{}
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	}
	dropins, err := os.ReadDir(path + ".d")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read %s.d: %w", path, err)
	}
	names := []string{}
	for _, d := range dropins {
		ext := strings.ToLower(filepath.Ext(d.Name()))
		if d.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") {
			names = append(names, d.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, filepath.Join(path+".d", n))
	}
	if len(files) == 0 {
		return nil, false, nil
	}
	index := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, false, fmt.Errorf("read %s: %w", f, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, false, fmt.Errorf("parse %s: %w", f, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil, false, fmt.Errorf("parse %s: not a mapping", f)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, appends := strings.CutSuffix(m.Content[i].Value, "+")
			values, list := scalarValues(m.Content[i+1])
			at, seen := index[key]
			switch {
			case !seen:
				index[key] = len(entries)
				entries = append(entries, entry{key: key, values: values, list: list || appends})
			case appends:
				entries[at].values = append(entries[at].values, values...)
				entries[at].list = true
			default:
				entries[at].values, entries[at].list = values, list
			}
		}
	}
	return entries, true, nil
}

func scalarValues(n *yaml.Node) ([]string, bool) {
	if n.Kind == yaml.SequenceNode {
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, c.Value)
		}
		return out, true
	}
	return []string{n.Value}, false
}

// configArgs turns config entries into the --key=value arguments k3s puts
// before the command line's own. A server drops keys that are not its
// flags with k3s's warning; an agent passes everything on, so an unknown
// key fails in argument parsing, as in k3s.
func configArgs(role string, entries []entry) (args, warnings []string) {
	for _, e := range entries {
		if _, known := k3sflags.ForRole(role, e.key); !known && role == "server" {
			warnings = append(warnings, fmt.Sprintf("Unknown flag --%s found in config.yaml, skipping", e.key))
			continue
		}
		dash := "--"
		if len(e.key) == 1 {
			dash = "-"
		}
		for _, v := range e.values {
			args = append(args, dash+e.key+"="+v)
		}
	}
	return args, warnings
}

// settings are the parsed flags: every value a flag got, in order.
type settings map[string][]string

// parseArgs parses --key=value / --key value / --bool arguments for role:
// scalar flags keep the last value, list flags every value (split on
// commas for the flags k3s splits).
func parseArgs(role string, args []string) (settings, error) {
	s := settings{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("unexpected argument %q", a)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := k3sflags.ForRole(role, name)
		if !ok {
			return nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if !hasValue {
			if f.Type == k3sflags.Bool {
				value = "true"
			} else if i+1 < len(args) {
				i++
				value = args[i]
			} else {
				return nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
		}
		if f.Type != k3sflags.StringSlice {
			s[f.Name] = []string{value}
			continue
		}
		if f.SplitsCommas {
			for _, p := range strings.Split(value, ",") {
				s[f.Name] = append(s[f.Name], strings.TrimSpace(p))
			}
		} else {
			s[f.Name] = append(s[f.Name], value)
		}
	}
	return s, nil
}

func (s settings) str(key, def string) string {
	if v := s[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return def
}

func (s settings) bool(key string) bool { return s.str(key, "false") == "true" }
