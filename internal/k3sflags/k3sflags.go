// Package k3sflags is the table of k3s server and agent flags that
// config.yaml accepts, with their types: k3s_config validates against it
// and the test bed's k3s stand-in parses config files with it.
package k3sflags

import (
	_ "embed"
	"fmt"
	"strings"
)

// k3s-flags.tsv is copied from the checked reference; its header says
// where each fact comes from.
//
//go:embed k3s-flags.tsv
var flagsTSV string

// Type is how k3s parses a flag's value.
type Type string

// Flag types.
const (
	Bool        Type = "bool"
	String      Type = "string"
	StringSlice Type = "string-slice"
	Int         Type = "int"
	Duration    Type = "duration"
)

// Flag is one k3s flag usable as a config.yaml key.
type Flag struct {
	Name   string
	Type   Type
	Server bool // accepted by k3s server
	Agent  bool // accepted by k3s agent
	Alias  string
	// SplitsCommas: k3s splits each item on commas (tls-san, node-ip, ...).
	SplitsCommas bool
}

// Parse reads a flag table in the k3s-flags.tsv format.
func Parse(tsv string) (map[string]Flag, error) {
	flags := map[string]Flag{}
	for n, line := range strings.Split(tsv, "\n") {
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "name\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 5 {
			return nil, fmt.Errorf("k3s-flags.tsv line %d: want 5 columns, got %d", n+1, len(cols))
		}
		f := Flag{Name: cols[0], Type: Type(cols[1]), SplitsCommas: strings.Contains(cols[4], "comma lists split")}
		switch cols[2] {
		case "server":
			f.Server = true
		case "agent":
			f.Agent = true
		case "both":
			f.Server, f.Agent = true, true
		default:
			return nil, fmt.Errorf("k3s-flags.tsv line %d: unknown applies_to %q", n+1, cols[2])
		}
		switch f.Type {
		case Bool, String, StringSlice, Int, Duration:
		default:
			return nil, fmt.Errorf("k3s-flags.tsv line %d: unknown type %q", n+1, f.Type)
		}
		// The note starts "alias x;" for the flags that have a short alias.
		if rest, ok := strings.CutPrefix(cols[4], "alias "); ok && len(rest) > 1 && rest[1] == ';' {
			f.Alias = rest[:1]
		}
		flags[f.Name] = f
	}
	return flags, nil
}

// All is the embedded table; the TSV is part of the binary, so a parse
// error is a build defect caught by the tests.
var All = func() map[string]Flag {
	flags, err := Parse(flagsTSV)
	if err != nil {
		panic(err)
	}
	return flags
}()

// ForRole returns the flag a key names for "server" or "agent", by name
// or alias; ok is false when that command does not take it.
func ForRole(role, key string) (Flag, bool) {
	f, ok := All[key]
	if !ok {
		for _, g := range All {
			if g.Alias != "" && g.Alias == key {
				f, ok = g, true
			}
		}
	}
	if !ok || (role == "server" && !f.Server) || (role == "agent" && !f.Agent) {
		return Flag{}, false
	}
	return f, true
}
