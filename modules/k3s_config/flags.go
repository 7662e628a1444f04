package main

import (
	_ "embed"
	"fmt"
	"strings"
)

// k3s-flags.tsv lists every k3s server/agent flag that config.yaml accepts,
// with its type and which commands take it (copied from the checked
// reference; its header says where each fact comes from).
//
//go:embed k3s-flags.tsv
var flagsTSV string

// flagType is how k3s parses a flag's value.
type flagType string

const (
	flagBool        flagType = "bool"
	flagString      flagType = "string"
	flagStringSlice flagType = "string-slice"
	flagInt         flagType = "int"
	flagDuration    flagType = "duration"
)

// flag is one k3s flag usable as a config.yaml key.
type flag struct {
	Name   string
	Type   flagType
	Server bool // accepted by k3s server
	Agent  bool // accepted by k3s agent
	Alias  string
	// SplitsCommas: k3s splits each item on commas (tls-san, node-ip, ...).
	SplitsCommas bool
}

// parseFlags reads the embedded flag table.
func parseFlags(tsv string) (map[string]flag, error) {
	flags := map[string]flag{}
	for n, line := range strings.Split(tsv, "\n") {
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "name\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 5 {
			return nil, fmt.Errorf("k3s-flags.tsv line %d: want 5 columns, got %d", n+1, len(cols))
		}
		f := flag{Name: cols[0], Type: flagType(cols[1]), SplitsCommas: strings.Contains(cols[4], "comma lists split")}
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
		case flagBool, flagString, flagStringSlice, flagInt, flagDuration:
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

// k3sFlags is the parsed table; the TSV is part of the binary, so a parse
// error is a build defect caught by the tests.
var k3sFlags = func() map[string]flag {
	flags, err := parseFlags(flagsTSV)
	if err != nil {
		panic(err)
	}
	return flags
}()

// removedFlags are flags older k3s releases took and current ones reject,
// with what to write instead.
var removedFlags = map[string]string{
	"cluster-secret":  "token (the module option)",
	"no-deploy":       "disable",
	"no-flannel":      "flannel-backend: none",
	"disable-selinux": "selinux: false",
}

// secretKeys hold credentials: their values are redacted in diffs and
// masked in the result like a no_log option.
var secretKeys = map[string]bool{
	"token":                 true,
	"agent-token":           true,
	"etcd-s3-access-key":    true,
	"etcd-s3-secret-key":    true,
	"etcd-s3-session-token": true,
	"datastore-endpoint":    true,
	"vpn-auth":              true,
}

// nearest returns the candidate closest to key by edit distance, if close
// enough to be a plausible misspelling.
func nearest(key string, candidates []string) string {
	best, bestDist := "", len(key)/2+2
	for _, c := range candidates {
		if d := editDistance(key, c); d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
