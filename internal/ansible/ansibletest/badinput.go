package ansibletest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// BadInput is one wrong value for one option, made from the spec.
type BadInput struct {
	Name   string // what is wrong, for the subtest's name
	Option string // the option the message must name
	Args   map[string]any
}

// BadInputs makes a bad-input table from the module's spec: for every
// option, at any depth, a value of the wrong type, an empty or missing
// required value, an unknown choice, a number out of range, a value that
// does not have the option's format (a Kubernetes name, namespace/name, a
// file that is a directory or missing). Each case changes one option of a
// valid base; a sub-option is changed in the first base that has its
// parent (give several bases to reach them all).
func BadInputs(m *ansible.Module, bases ...map[string]any) []BadInput {
	var out []BadInput
	var walk func(options []ansible.Option, path []string)
	walk = func(options []ansible.Option, path []string) {
		for _, o := range options {
			p := append(append([]string{}, path...), o.Name)
			base := firstWith(bases, path)
			if base == nil {
				continue
			}
			for what, val := range badValues(o) {
				args := deepCopy(base)
				setAt(args, p, val)
				out = append(out, BadInput{Name: strings.Join(p, ".") + ": " + what, Option: o.Name, Args: args})
			}
			if o.Required {
				args := deepCopy(base)
				deleteAt(args, p)
				out = append(out, BadInput{Name: strings.Join(p, ".") + ": missing", Option: o.Name, Args: args})
			}
			if len(o.Options) > 0 {
				walk(o.Options, p)
			}
		}
	}
	walk(m.Spec.Options, nil)
	return out
}

// badValues are wrong values for one option, by what is wrong with them.
func badValues(o ansible.Option) map[string]any {
	out := map[string]any{}
	switch o.TypeName() {
	case ansible.TypeInt:
		out["not an int"] = "ten"
		out["a float"] = 1.5
		if o.Positive {
			out["zero"] = 0
			out["negative"] = -5
		}
	case ansible.TypeBool:
		out["not a bool"] = "maybe"
	case ansible.TypeFloat:
		out["not a float"] = "bad-float"
	case ansible.TypeDict:
		out["not a dict"] = "plain"
		out["a list"] = []any{"bad-list-item"}
	case ansible.TypeList:
		out["a dict"] = map[string]any{"bad-key": "bad-value"}
		switch o.Elements {
		case ansible.TypeDict:
			out["a list of numbers"] = []any{1}
		case ansible.TypeInt:
			out["a list of words"] = []any{"bad-word"}
		case ansible.TypeStr, ansible.TypePath:
			out["a list of dicts"] = []any{map[string]any{"bad-key": "bad-value"}}
		}
	case ansible.TypeStr, ansible.TypePath:
		out["a dict"] = map[string]any{"bad-key": "bad-value"}
		out["a list"] = []any{"bad-list-item"}
		if o.Required {
			out["null"] = nil
		}
	}
	if len(o.Choices) > 0 {
		out["an unknown choice"] = "no-such-choice"
	}
	wrap := func(s string) any {
		if o.TypeName() == ansible.TypeList {
			return []any{s}
		}
		return s
	}
	switch o.Format {
	case ansible.FormatNamespace:
		out["an invalid namespace"] = wrap("Bad_Namespace")
		if o.Required || o.TypeName() == ansible.TypeList {
			out["an empty namespace"] = wrap("")
		}
		out["a namespace too long"] = wrap(strings.Repeat("n", 64))
	case ansible.FormatObjectName:
		out["an invalid name"] = wrap("Bad Name!")
		if o.Required || o.TypeName() == ansible.TypeList {
			out["an empty name"] = wrap("")
		}
	case ansible.FormatNamespacedName:
		out["no namespace"] = wrap("just-a-name")
		out["an invalid namespace/name"] = wrap("Bad_NS/x")
	case ansible.FormatFile:
		out["a directory"] = wrap(os.TempDir())
		out["a missing file"] = wrap("/nonexistent/bad-input-file")
	}
	return out
}

// CheckBadInputs runs every case: each must fail with one msg that names
// the option, before the module's body runs (so nothing is changed), and
// with none of secrets in the output.
func CheckBadInputs(t *testing.T, m *ansible.Module, cases []BadInput, secrets ...string) {
	t.Helper()
	require.NotEmpty(t, cases)
	body := func(context.Context, *ansible.Request) (*ansible.Result, error) {
		return nil, fmt.Errorf("the module's body ran")
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			res, code, raw := Run(t, m, body, tc.Args)
			assert.Equal(t, 1, code)
			msg, _ := res["msg"].(string)
			assert.NotContains(t, msg, "the module's body ran", "validation let the bad value through")
			assert.Contains(t, msg, tc.Option, "the message names the option")
			for _, s := range secrets {
				assert.NotContains(t, raw, s)
			}
		})
	}
	t.Logf("%s: %d bad inputs, each a clear error", m.Name, len(cases))
}

// firstWith returns the first base in which every key of path is present
// (descending into the first element of lists).
func firstWith(bases []map[string]any, path []string) map[string]any {
	for _, b := range bases {
		var cur any = b
		ok := true
		for _, k := range path {
			if cur = child(cur, k); cur == nil {
				ok = false
				break
			}
		}
		if ok {
			return b
		}
	}
	return nil
}

func child(v any, key string) any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		v = l[0]
	}
	if d, ok := v.(map[string]any); ok {
		return d[key]
	}
	return nil
}

// container returns the dict that holds the last key of path.
func container(args map[string]any, path []string) map[string]any {
	var cur any = args
	for _, k := range path[:len(path)-1] {
		cur = child(cur, k)
	}
	if l, ok := cur.([]any); ok {
		cur = l[0]
	}
	d, _ := cur.(map[string]any)
	return d
}

func setAt(args map[string]any, path []string, val any) {
	container(args, path)[path[len(path)-1]] = val
}

func deleteAt(args map[string]any, path []string) {
	delete(container(args, path), path[len(path)-1])
}

func deepCopy(d map[string]any) map[string]any {
	raw, _ := json.Marshal(d)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
