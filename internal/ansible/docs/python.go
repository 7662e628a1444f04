package docs

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Python renders plugins/modules/<name>.py: what Ansible finds as the module.
// Its action plugin runs binary instead, so the file holds what the tools
// read from a Python module: the docs (ansible-doc), and an argument spec
// rendered from the same Go spec, which ansible-test's validate-modules
// holds to the docs and ansible-lint's args rule holds the roles' tasks to.
// Run without its action plugin, it fails and says so.
func Python(m *ansible.Module, binary, runsOn string) ([]byte, error) {
	doc, err := documentationOf(m)
	if err != nil {
		return nil, err
	}
	parts := map[string]any{"DOCUMENTATION": doc, "RETURN": docReturns(m.Returns)}
	var b strings.Builder
	b.WriteString("#!/usr/bin/python\n")
	b.WriteString("# Copyright: gitops.k3s_flux contributors\n")
	b.WriteString("# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)\n")
	b.WriteString("# Generated from the module's Go spec by `make docs`; do not edit.\n")
	fmt.Fprintf(&b, "# gitops.k3s_flux.%s is a Go binary: its action plugin runs\n# plugins/bin/<os>_<arch>/%s on %s.\n", m.Name, binary, runsOn)
	b.WriteString("# This file is its documentation and argument spec, for ansible-doc, ansible-test and ansible-lint.\n\n")
	b.WriteString("from __future__ import annotations\n\n")
	for _, name := range []string{"DOCUMENTATION", "EXAMPLES", "RETURN"} {
		var text string
		if name == "EXAMPLES" {
			text = strings.TrimLeft(m.Examples, "\n")
		} else if text, err = yamlText(parts[name]); err != nil {
			return nil, fmt.Errorf("render %s of %s: %w", name, m.Name, err)
		}
		if strings.Contains(text, `"""`) {
			return nil, fmt.Errorf("module %s: its %s holds a triple quote", m.Name, name)
		}
		if line := assertLine.FindString(text); line != "" {
			return nil, fmt.Errorf("module %s: a line of its %s starts with assert, which ansible-test's no-assert test refuses even in a string: %q; reword the text", m.Name, name, line)
		}
		fmt.Fprintf(&b, "%s = r\"\"\"\n%s\"\"\"\n\n", name, text)
	}
	b.WriteString("from ansible.module_utils.basic import AnsibleModule\n\n\n")
	b.WriteString("def main():\n")
	b.WriteString("    module = AnsibleModule(\n")
	fmt.Fprintf(&b, "        argument_spec=%s,\n", pyOptions(m.Spec.Options, 2))
	writeConstraints(&b, 2, m.Spec.MutuallyExclusive, m.Spec.RequiredTogether, m.Spec.RequiredOneOf, m.Spec.RequiredIf, "=")
	fmt.Fprintf(&b, "        supports_check_mode=%s,\n", pyValue(orNone(m.CheckMode) != "none"))
	b.WriteString("    )\n")
	fmt.Fprintf(&b, "    module.fail_json(\n        msg=%s,\n    )\n\n\n", strconv.Quote(fmt.Sprintf(
		"gitops.k3s_flux.%s runs as a Go binary through its action plugin, which Ansible did not load: install the whole collection", m.Name)))
	b.WriteString("if __name__ == \"__main__\":\n    main()\n")
	return []byte(b.String()), nil
}

// assertLine is ansible-test's no-assert pattern (its ASSERT_RE), per line.
var assertLine = regexp.MustCompile(`(?m)^\s*assert[^a-z0-9_:].*$`)

// yamlText is v as YAML with lines wrapped near 80 columns (yaml.v2's
// emitter wraps, v3's cannot be told to), so that no line of the Python
// file is longer than ansible-test's pep8 allows. The wrapped text is read
// back and must mean what v3's unwrapped text means.
func yamlText(v any) (string, error) {
	wrapped, err := yamlv2.Marshal(v)
	if err != nil {
		return "", err
	}
	var want, got any
	plain, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	if err := yaml.Unmarshal(plain, &want); err != nil {
		return "", err
	}
	if err := yaml.Unmarshal(wrapped, &got); err != nil {
		return "", err
	}
	if !reflect.DeepEqual(want, got) {
		return "", fmt.Errorf("the wrapped YAML reads back as something else")
	}
	return string(wrapped), nil
}

// pyOptions is an argument_spec (or an option's sub-options) as a Python
// dict literal, indented depth levels of four spaces.
func pyOptions(options []ansible.Option, depth int) string {
	if len(options) == 0 {
		return "{}"
	}
	in := strings.Repeat("    ", depth+1)
	var b strings.Builder
	b.WriteString("{\n")
	for _, o := range options {
		fmt.Fprintf(&b, "%s%s: {\n", in, strconv.Quote(o.Name))
		field := func(key string, value string) { fmt.Fprintf(&b, "%s    %s: %s,\n", in, strconv.Quote(key), value) }
		field("type", strconv.Quote(string(o.TypeName())))
		if o.Elements != "" {
			field("elements", strconv.Quote(string(o.Elements)))
		}
		if o.Required {
			field("required", "True")
		}
		if o.Default != nil {
			field("default", pyValue(o.Default))
		}
		if len(o.Choices) > 0 {
			field("choices", pyValue(o.Choices))
		}
		if len(o.Aliases) > 0 {
			field("aliases", pyValue(o.Aliases))
		}
		if o.NoLog {
			field("no_log", "True")
		} else if o.NotSecret {
			field("no_log", "False")
		}
		if len(o.Options) > 0 {
			field("options", pyOptions(o.Options, depth+2))
		}
		writeConstraints(&b, depth+2, o.MutuallyExclusive, o.RequiredTogether, o.RequiredOneOf, o.RequiredIf, ": ")
		fmt.Fprintf(&b, "%s},\n", in)
	}
	fmt.Fprintf(&b, "%s}", strings.Repeat("    ", depth))
	return b.String()
}

// writeConstraints writes the constraints that are set, as keyword
// arguments (sep "=") or dict entries (sep ": "), one rule a line.
func writeConstraints(b *strings.Builder, depth int, mutuallyExclusive, requiredTogether, requiredOneOf [][]string, requiredIf []ansible.RequiredIf, sep string) {
	in := strings.Repeat("    ", depth)
	write := func(name string, rows []string) {
		if len(rows) == 0 {
			return
		}
		if sep != "=" {
			name = strconv.Quote(name)
		}
		fmt.Fprintf(b, "%s%s%s[\n", in, name, sep)
		for _, row := range rows {
			fmt.Fprintf(b, "%s    %s,\n", in, row)
		}
		fmt.Fprintf(b, "%s],\n", in)
	}
	lists := func(lists [][]string) []string {
		rows := make([]string, len(lists))
		for i, l := range lists {
			rows[i] = pyValue(l)
		}
		return rows
	}
	write("mutually_exclusive", lists(mutuallyExclusive))
	write("required_together", lists(requiredTogether))
	write("required_one_of", lists(requiredOneOf))
	rows := make([]string, len(requiredIf))
	for i, r := range requiredIf {
		rows[i] = fmt.Sprintf("(%s, %s, %s", strconv.Quote(r.Key), pyValue(r.Value), pyValue(r.Requirements))
		if r.AnyOf {
			rows[i] += ", True"
		}
		rows[i] += ")"
	}
	write("required_if", rows)
}

// pyList is items as a Python list literal on one line.
func pyList[T any](items []T) string {
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = pyValue(item)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// pyValue is v as a Python literal on one line: the values a spec holds
// (defaults, choices, names).
func pyValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case string:
		return strconv.Quote(v)
	case int, int64:
		return fmt.Sprint(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []string:
		return pyList(v)
	case [][]string:
		return pyList(v)
	case []any:
		return pyList(v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		items := make([]string, len(keys))
		for i, k := range keys {
			items[i] = strconv.Quote(k) + ": " + pyValue(v[k])
		}
		return "{" + strings.Join(items, ", ") + "}"
	default:
		panic(fmt.Sprintf("a spec value of type %T has no Python literal here", v))
	}
}
