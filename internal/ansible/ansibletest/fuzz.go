package ansibletest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// EchoAll is a module body that returns everything it was given, in its
// values and in its msg, and fails: the harshest body for no_log masking.
func EchoAll(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
	res := &ansible.Result{Changed: true}
	res.Set("params", req.Params)
	return res, fmt.Errorf("echo: %v", req.Params)
}

// FuzzNoLog fuzzes a module's arguments and fails when any no_log value
// reaches stdout. The arguments are built from the module's spec with a
// distinct secret in every no_log place (extra adds secrets the spec
// cannot place, such as a secret flag inside a dict of flags, and fixed
// values such as a temporary path), then mutated as the fuzzer's bytes
// say: misspelt and unknown keys at every level, aliases, wrong types,
// nulls, dicts as JSON or k=v strings, non-dict list items, lists wrapped
// in lists. Each input runs through EchoAll and through each body given
// (in check and diff mode, so nothing is written).
func FuzzNoLog(f *testing.F, m *ansible.Module, extra map[string]any, bodies ...ansible.RunFunc) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	base, secrets := argsFromSpec(m.Spec.Options, extra)
	f.Fuzz(func(t *testing.T, data []byte) {
		mut := &mutator{data: data}
		args := mut.dict(m.Spec.Options, base)
		args["_ansible_check_mode"], args["_ansible_diff"] = true, true
		for _, body := range append([]ansible.RunFunc{EchoAll}, bodies...) {
			_, _, raw := Run(t, m, body, args)
			for _, s := range secrets {
				if strings.Contains(raw, s) {
					in, _ := json.Marshal(args)
					t.Fatalf("no_log value %q in stdout\nargs: %s\nstdout: %s", s, in, raw)
				}
			}
		}
	})
}

// argsFromSpec builds valid-looking arguments for every option, with a
// distinct secret wherever an option is no_log, and returns the secrets.
func argsFromSpec(options []ansible.Option, extra map[string]any) (map[string]any, []string) {
	g := &generator{}
	args := g.options(options)
	for k, v := range extra {
		args[k] = v
		g.secrets = append(g.secrets, secretStrings(v)...)
	}
	return args, g.secrets
}

// secretStrings lists the fuzz secrets inside an extra value.
func secretStrings(v any) []string {
	switch t := v.(type) {
	case string:
		if strings.HasPrefix(t, SecretPrefix) {
			return []string{t}
		}
	case map[string]any:
		var out []string
		for _, e := range t {
			out = append(out, secretStrings(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, secretStrings(e)...)
		}
		return out
	}
	return nil
}

// SecretPrefix starts every secret the fuzzer places; a value given in
// extra that starts with it is a secret too.
const SecretPrefix = "Zq7secret"

type generator struct{ secrets []string }

func (g *generator) secret() string {
	s := fmt.Sprintf("%s%dx", SecretPrefix, len(g.secrets))
	g.secrets = append(g.secrets, s)
	return s
}

func (g *generator) options(options []ansible.Option) map[string]any {
	out := map[string]any{}
	for _, o := range options {
		out[o.Name] = g.value(o)
	}
	return out
}

func (g *generator) value(o ansible.Option) any {
	switch {
	case len(o.Options) > 0 && o.TypeName() == ansible.TypeList:
		return []any{g.options(o.Options), g.options(o.Options)}
	case len(o.Options) > 0:
		return g.options(o.Options)
	case o.NoLog && o.TypeName() == ansible.TypeList:
		return []any{g.secret(), g.secret()}
	case o.NoLog && o.TypeName() == ansible.TypeDict:
		return map[string]any{"k": g.secret()}
	case o.NoLog:
		return g.secret()
	case len(o.Choices) > 0:
		return o.Choices[0]
	}
	switch o.TypeName() {
	case ansible.TypeBool:
		return true
	case ansible.TypeInt:
		return 30
	case ansible.TypeFloat:
		return 1.5
	case ansible.TypeList:
		return []any{"a", "b"}
	case ansible.TypeDict:
		return map[string]any{"k": "v"}
	case ansible.TypePath:
		return "/nonexistent/fuzz"
	}
	return "value"
}

// mutator changes arguments as its bytes say; with no bytes left it
// changes nothing.
type mutator struct {
	data []byte
	pos  int
}

func (m *mutator) next() int {
	if m.pos >= len(m.data) {
		return 0
	}
	m.pos++
	return int(m.data[m.pos-1])
}

// options mutates a dict of sub-options, which may end up in another
// shape: a JSON or k=v string, or wrapped in a list.
func (m *mutator) options(options []ansible.Option, in map[string]any) any {
	out := m.dict(options, in)
	switch m.next() % 8 {
	case 1:
		raw, _ := json.Marshal(out)
		return string(raw)
	case 2:
		if kv, ok := keyValue(out); ok {
			return kv
		}
	case 3:
		return []any{out}
	}
	return out
}

// dict mutates the keys and values of a dict of options.
func (m *mutator) dict(options []ansible.Option, in map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range sortedKeys(in) {
		o := optionNamed(options, k)
		key := k
		switch m.next() % 10 {
		case 1:
			key = m.slip(k, options)
		case 2:
			if o != nil && len(o.Aliases) > 0 {
				key = o.Aliases[m.next()%len(o.Aliases)]
			}
		case 3:
			continue // left out
		}
		var val any = in[k]
		if o != nil {
			val = m.value(*o, val)
		}
		out[key] = val
	}
	if m.next()%4 == 1 {
		out[fmt.Sprintf("unknown_%d", m.next())] = "plain"
	}
	return out
}

// value mutates one option's value.
func (m *mutator) value(o ansible.Option, v any) any {
	switch m.next() % 12 {
	case 1:
		return nil
	case 2:
		return 42
	case 3:
		return []any{v}
	case 4:
		return "plain"
	case 5:
		return true
	case 6:
		if len(o.Options) == 0 {
			return map[string]any{"x": v}
		}
	case 7:
		if d, ok := v.(map[string]any); ok && len(o.Options) == 0 && len(d) > 0 {
			// a misspelt key inside a free-form dict (a flag of k3s_config's config)
			keys := sortedKeys(d)
			k := keys[m.next()%len(keys)]
			out := map[string]any{}
			for key, e := range d {
				out[key] = e
			}
			delete(out, k)
			out[m.slip(k, nil)] = d[k]
			return out
		}
	}
	if len(o.Options) == 0 {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		return m.options(o.Options, t)
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			d, _ := e.(map[string]any)
			switch m.next() % 6 {
			case 1:
				out = append(out, "plain", m.options(o.Options, d))
			case 2:
				out = append(out, []any{m.options(o.Options, d)})
			default:
				out = append(out, m.options(o.Options, d))
			}
		}
		return out
	}
	return v
}

// slip misspells key by one slip (never into another option's name).
func (m *mutator) slip(key string, options []ansible.Option) string {
	if len(key) < 2 {
		return key + "x"
	}
	i := m.next() % len(key)
	var out string
	switch m.next() % 3 {
	case 0:
		out = key[:i] + key[i+1:]
	case 1:
		out = key[:i] + "q" + key[i:]
	default:
		j := min(i+1, len(key)-1)
		b := []byte(key)
		b[i], b[j] = b[j], b[i]
		out = string(b)
	}
	if out == key || optionNamed(options, out) != nil {
		return key + "q"
	}
	return out
}

func optionNamed(options []ansible.Option, key string) *ansible.Option {
	for i, o := range options {
		if o.Name == key {
			return &options[i]
		}
		for _, a := range o.Aliases {
			if a == key {
				return &options[i]
			}
		}
	}
	return nil
}

// keyValue writes a flat dict as "k=v k2=v2", the other string form
// Ansible accepts for a dict.
func keyValue(d map[string]any) (string, bool) {
	parts := make([]string, 0, len(d))
	for _, k := range sortedKeys(d) {
		s, ok := d[k].(string)
		if !ok || strings.ContainsAny(s, " ,='\"\\") {
			return "", false
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " "), true
}

func sortedKeys(d map[string]any) []string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
