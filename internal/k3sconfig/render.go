package k3sconfig

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sflags"
)

// header opens every file the module writes.
const header = "# Managed by Ansible (gitops.k3s_flux.k3s_config): local changes are overwritten.\n"

// desired is what the user asked to be in the file.
type desired struct {
	Role        string
	Config      map[string]any
	Token       string
	Server      string
	ClusterInit *bool
}

// ownedKeys are the config keys the module sets from its own options.
var ownedKeys = map[string]string{
	"token":        "token",
	"t":            "token",
	"server":       "server",
	"s":            "server",
	"cluster-init": "cluster_init",
}

// render validates the wanted config and returns the canonical file
// content. (Its secrets are masked through the options' no_log settings.)
func render(d desired) ([]byte, error) {
	values, err := validateConfig(d.Role, d.Config)
	if err != nil {
		return nil, err
	}
	if d.Token != "" {
		if strings.ContainsAny(d.Token, " \t\r\n") {
			return nil, fmt.Errorf("token must not contain whitespace or line breaks")
		}
		values["token"] = d.Token
	}
	if d.Server != "" {
		if err := validateServerURL(d.Server); err != nil {
			return nil, err
		}
		values["server"] = d.Server
	}
	if d.ClusterInit != nil {
		if d.Role != "server" {
			return nil, fmt.Errorf("cluster_init applies to servers only (role is %s)", d.Role)
		}
		values["cluster-init"] = *d.ClusterInit
	}
	return []byte(header + encodeYAML(values)), nil
}

func validateServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Path != "" && u.Path != "/" {
		return fmt.Errorf("server must be the https URL of an existing server, such as https://10.0.0.10:6443; got %q", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("server %q has an invalid port %q", s, p)
		}
	}
	return nil
}

// validateConfig checks every key of config against the k3s flags of role
// and returns the values in canonical form. All problems are reported at
// once, sorted by key.
func validateConfig(role string, config map[string]any) (map[string]any, error) {
	values := map[string]any{}
	var problems []string
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		raw := config[key]
		if raw == nil {
			continue // null means "not set", as with Jinja's default(none)
		}
		f, err := lookupFlag(role, key)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		v, err := normalize(f, raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("config.%s %v", key, err))
			continue
		}
		values[key] = v
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return values, nil
}

// lookupFlag resolves a config key (possibly ending in "+", k3s's append
// syntax) to its flag for role, or explains why the key cannot be used.
func lookupFlag(role, key string) (k3sflags.Flag, error) {
	name, appends := strings.CutSuffix(key, "+")
	if opt, ok := ownedKeys[name]; ok {
		return k3sflags.Flag{}, fmt.Errorf("config.%s is set by the module option %s: use %s instead of config.%s", key, opt, opt, key)
	}
	if name == "config" || name == "c" {
		return k3sflags.Flag{}, fmt.Errorf("config.%s names the config file itself: k3s ignores it inside config.yaml (use the path option)", key)
	}
	for _, f := range k3sFlags {
		if f.Alias == name {
			return k3sflags.Flag{}, fmt.Errorf("config.%s is the short alias of %s: write %s%s so the file reads plainly", key, f.Name, f.Name, strings.Repeat("+", btoi(appends)))
		}
	}
	f, ok := k3sFlags[name]
	if !ok {
		if instead, removed := removedFlags[name]; removed {
			return k3sflags.Flag{}, fmt.Errorf("config.%s was removed from k3s: use %s", key, instead)
		}
		msg := fmt.Sprintf("config.%s is not a k3s %s flag", key, role)
		if s := nearest(name, flagNames(role)); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		}
		return k3sflags.Flag{}, fmt.Errorf("%s", msg)
	}
	if role == "agent" && !f.Agent {
		return k3sflags.Flag{}, fmt.Errorf("config.%s is a k3s server flag: k3s agent refuses to start with it (role is agent)", key)
	}
	if role == "server" && !f.Server {
		return k3sflags.Flag{}, fmt.Errorf("config.%s is a k3s agent flag: k3s server would ignore it (role is server)", key)
	}
	if appends && f.Type != k3sflags.StringSlice {
		return k3sflags.Flag{}, fmt.Errorf("config.%s appends to a list, but %s is a %s flag, not a list", key, name, f.Type)
	}
	return f, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func flagNames(role string) []string {
	var names []string
	for _, f := range k3sFlags {
		if (role == "server" && f.Server) || (role == "agent" && f.Agent) {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return names
}

var (
	booleans = map[string]bool{"y": true, "yes": true, "on": true, "true": true, "t": true, "1": true,
		"n": false, "no": false, "off": false, "false": false, "f": false, "0": false}
)

// normalize checks a value against its flag's type and returns it in the
// form rendered: bool, int, string or []string.
func normalize(f k3sflags.Flag, raw any) (any, error) {
	switch f.Type {
	case k3sflags.Bool:
		switch t := raw.(type) {
		case bool:
			return t, nil
		case string:
			if b, ok := booleans[strings.ToLower(strings.TrimSpace(t))]; ok {
				return b, nil
			}
		}
		return nil, fmt.Errorf("must be a boolean (true or false), got %s", describe(raw))
	case k3sflags.Int:
		switch t := raw.(type) {
		case json.Number:
			if n, err := strconv.Atoi(t.String()); err == nil {
				return n, nil
			}
		case string:
			if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
				return n, nil
			}
		}
		return nil, fmt.Errorf("must be an integer, got %s", describe(raw))
	case k3sflags.Duration:
		if s, ok := raw.(string); ok {
			if _, err := time.ParseDuration(s); err == nil {
				return s, nil
			}
		}
		return nil, fmt.Errorf("must be a duration with a unit, such as \"30s\" or \"5m\", got %s", describe(raw))
	case k3sflags.String:
		return normalizeString(f, raw)
	case k3sflags.StringSlice:
		return normalizeList(f, raw)
	}
	return nil, fmt.Errorf("has an unknown flag type %s", f.Type)
}

func normalizeString(f k3sflags.Flag, raw any) (any, error) {
	if f.Name == "write-kubeconfig-mode" {
		s, ok := raw.(string)
		if n, isNum := raw.(json.Number); isNum {
			return nil, fmt.Errorf("must be an octal string such as \"0644\", got the integer %s: YAML reads an unquoted 0644 as the octal number 420 (and 644 as decimal), so quote the mode", n)
		}
		if !ok || !isOctalMode(s) {
			return nil, fmt.Errorf("must be an octal file mode as a string, such as \"0600\" or \"0644\", got %s", describe(raw))
		}
		return s, nil
	}
	switch t := raw.(type) {
	case string:
		if strings.ContainsAny(t, "\r\n") {
			return nil, fmt.Errorf("must be a single line, got a value with a line break")
		}
		return t, nil
	case json.Number:
		return t.String(), nil
	case bool:
		return nil, fmt.Errorf("must be a string, got the boolean %t: YAML reads unquoted yes/no/on/off/true/false as booleans, so quote the value", t)
	}
	return nil, fmt.Errorf("must be a string, got %s", describe(raw))
}

func normalizeList(f k3sflags.Flag, raw any) (any, error) {
	var items []string
	switch t := raw.(type) {
	case []any:
		for i, e := range t {
			switch et := e.(type) {
			case string:
				items = append(items, et)
			case json.Number:
				items = append(items, et.String())
			default:
				return nil, fmt.Errorf("item %d must be a string, got %s", i, describe(e))
			}
		}
	case string:
		if strings.Contains(t, ",") && !f.SplitsCommas {
			return nil, fmt.Errorf("is a list and k3s does not split it on commas: %q would reach k3s as one item; give a YAML list with one item each", t)
		}
		items = []string{t}
	default:
		return nil, fmt.Errorf("must be a list of strings, got %s", describe(raw))
	}
	if f.SplitsCommas {
		// k3s splits each item on commas; render the list it will see.
		var split []string
		for _, it := range items {
			for _, p := range strings.Split(it, ",") {
				split = append(split, strings.TrimSpace(p))
			}
		}
		items = split
	}
	for i, it := range items {
		switch {
		case strings.TrimSpace(it) == "":
			return nil, fmt.Errorf("item %d is empty", i)
		case strings.ContainsAny(it, "\r\n"):
			return nil, fmt.Errorf("item %d has a line break", i)
		case f.Name == "node-label" && !isLabel(it):
			return nil, fmt.Errorf("item %q must be key=value", it)
		case f.Name == "node-taint" && !isTaint(it):
			return nil, fmt.Errorf("item %q must be key=value:Effect or key:Effect, Effect one of NoSchedule, PreferNoSchedule, NoExecute", it)
		}
	}
	return items, nil
}

// describe names a decoded JSON value for an error message.
func describe(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", t)
	case json.Number:
		return "the number " + t.String()
	case bool:
		return fmt.Sprintf("the boolean %t", t)
	case []any:
		return "a list"
	case map[string]any:
		return "a dict"
	}
	return fmt.Sprintf("%T", v)
}

// isOctalMode accepts a file mode such as 644 or 0644.
func isOctalMode(s string) bool {
	s = strings.TrimPrefix(s, "0")
	if len(s) != 3 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '7' {
			return false
		}
	}
	return true
}

// isLabel accepts key=value (value may be empty), as kubelet's
// --node-labels does.
func isLabel(s string) bool {
	k, _, ok := strings.Cut(s, "=")
	return ok && k != "" && !strings.ContainsAny(s, " \t")
}

// isTaint accepts key=value:Effect or key:Effect.
func isTaint(s string) bool {
	rest, effect, ok := strings.Cut(s, ":")
	if !ok || strings.ContainsAny(s, " \t") {
		return false
	}
	switch effect {
	case "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		return false
	}
	key, _, _ := strings.Cut(rest, "=")
	return key != ""
}
