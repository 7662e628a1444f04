package ansible

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// validation holds what validating a module's parameters produced: the
// coerced parameters, the errors (AnsibleModule reports the first), the
// no_log values to mask and the warnings.
type validation struct {
	module   string
	errors   []string
	noLog    []string
	warnings []string
}

func (v *validation) fail(ctx []string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(ctx) > 0 {
		msg += " found in " + strings.Join(ctx, " -> ")
	}
	v.errors = append(v.errors, msg)
}

// validate checks params against spec and returns the coerced parameters,
// every option present (nil when unset), as AnsibleModule.params would be.
func (v *validation) validate(spec Spec, params map[string]any, ctx []string) map[string]any {
	params = v.resolveAliases(spec, params)
	v.collectNoLog(spec.Options, params)
	if !v.checkSupported(spec, params, ctx) {
		return params
	}
	v.checkMutuallyExclusive(spec.MutuallyExclusive, params, ctx)
	v.checkRequired(spec.Options, params, ctx)
	for _, o := range spec.Options {
		if _, set := params[o.Name]; !set && o.Default != nil {
			params[o.Name] = o.Default
		}
	}
	for _, o := range spec.Options {
		if val, ok := params[o.Name]; ok && val != nil {
			params[o.Name] = v.convertOption(o, val, ctx)
		}
	}
	for _, o := range spec.Options {
		v.checkChoices(o, params, ctx)
		v.checkPositive(o, params, ctx)
		v.checkFormat(o, params, ctx)
	}
	v.checkRequiredTogether(spec.RequiredTogether, params, ctx)
	v.checkRequiredOneOf(spec.RequiredOneOf, params, ctx)
	v.checkRequiredIf(spec.RequiredIf, params, ctx)
	for _, o := range spec.Options {
		if _, set := params[o.Name]; !set {
			params[o.Name] = nil
		}
	}
	for _, o := range spec.Options {
		if len(o.Options) > 0 {
			params[o.Name] = v.validateSubOptions(o, params[o.Name], ctx)
		}
	}
	return params
}

func (v *validation) resolveAliases(spec Spec, params map[string]any) map[string]any {
	out := make(map[string]any, len(params))
	for k, val := range params {
		out[k] = val
	}
	for _, o := range spec.Options {
		for _, alias := range o.Aliases {
			val, ok := out[alias]
			if !ok {
				continue
			}
			if _, both := params[o.Name]; both {
				v.warnings = append(v.warnings, fmt.Sprintf("Both option %s and its alias %s are set.", o.Name, alias))
			}
			out[o.Name] = val
			delete(out, alias)
		}
	}
	return out
}

func (v *validation) collectNoLog(options []Option, params map[string]any) {
	for _, o := range options {
		if o.NoLog {
			v.noLog = append(v.noLog, ScalarStrings(params[o.Name])...)
		}
		if o.NoLogValues != nil && params[o.Name] != nil {
			v.noLog = append(v.noLog, o.NoLogValues(params[o.Name])...)
		}
	}
}

// ScalarStrings lists the string forms of every scalar in val, as Python's
// _list_no_log_values does for a no_log option (a module's NoLogValues
// uses it for the secrets it picks out).
func ScalarStrings(val any) []string {
	switch t := val.(type) {
	case nil, bool:
		return nil
	case string:
		if t == "" {
			return nil
		}
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, ScalarStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range t {
			out = append(out, ScalarStrings(e)...)
		}
		return out
	default:
		return []string{fmt.Sprint(t)}
	}
}

func (v *validation) checkSupported(spec Spec, params map[string]any, ctx []string) bool {
	known := map[string]bool{}
	var names, aliases []string
	for _, o := range spec.Options {
		known[o.Name] = true
		names = append(names, o.Name)
		aliases = append(aliases, o.Aliases...)
	}
	var unsupported []string
	for k := range params {
		if !known[k] {
			unsupported = append(unsupported, strings.Join(append(append([]string{}, ctx...), k), "."))
		}
	}
	if len(unsupported) == 0 {
		return true
	}
	sort.Strings(unsupported)
	sort.Strings(names)
	sort.Strings(aliases)
	supported := strings.Join(names, ", ")
	if len(aliases) > 0 {
		supported += " (" + strings.Join(aliases, ", ") + ")"
	}
	v.errors = append(v.errors, fmt.Sprintf("Unsupported parameters for (%s) module: %s. Supported parameters include: %s.",
		v.module, strings.Join(unsupported, ", "), supported))
	return false
}

func countPresent(terms []string, params map[string]any) int {
	n := 0
	for _, t := range terms {
		if _, ok := params[t]; ok {
			n++
		}
	}
	return n
}

func (v *validation) checkMutuallyExclusive(groups [][]string, params map[string]any, ctx []string) {
	var bad []string
	for _, g := range groups {
		if countPresent(g, params) > 1 {
			bad = append(bad, strings.Join(g, "|"))
		}
	}
	if len(bad) > 0 {
		v.fail(ctx, "parameters are mutually exclusive: %s", strings.Join(bad, ", "))
	}
}

func (v *validation) checkRequired(options []Option, params map[string]any, ctx []string) {
	var missing []string
	for _, o := range options {
		if val, ok := params[o.Name]; o.Required && (!ok || val == nil) {
			missing = append(missing, o.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		v.fail(ctx, "missing required arguments: %s", strings.Join(missing, ", "))
	}
}

func (v *validation) checkRequiredTogether(groups [][]string, params map[string]any, ctx []string) {
	for _, g := range groups {
		if n := countPresent(g, params); n > 0 && n < len(g) {
			v.fail(ctx, "parameters are required together: %s", strings.Join(g, ", "))
			return
		}
	}
}

func (v *validation) checkRequiredOneOf(groups [][]string, params map[string]any, ctx []string) {
	for _, g := range groups {
		if countPresent(g, params) == 0 {
			v.fail(ctx, "one of the following is required: %s", strings.Join(g, ", "))
			return
		}
	}
}

func (v *validation) checkRequiredIf(rules []RequiredIf, params map[string]any, ctx []string) {
	for _, r := range rules {
		val, ok := params[r.Key]
		if !ok || !sameValue(val, r.Value) {
			continue
		}
		var missing []string
		for _, req := range r.Requirements {
			if _, ok := params[req]; !ok {
				missing = append(missing, req)
			}
		}
		threshold, requires := 1, "all"
		if r.AnyOf {
			threshold, requires = len(r.Requirements), "any"
		}
		if len(missing) > 0 && len(missing) >= threshold {
			v.fail(ctx, "%s is %s but %s of the following are missing: %s", r.Key, pyStr(r.Value), requires, strings.Join(missing, ", "))
			return
		}
	}
}

func (v *validation) checkChoices(o Option, params map[string]any, ctx []string) {
	val, ok := params[o.Name]
	if len(o.Choices) == 0 || !ok || val == nil {
		return
	}
	choices := make([]string, len(o.Choices))
	for i, c := range o.Choices {
		choices[i] = pyStr(c)
	}
	if list, isList := val.([]any); isList {
		var nomatch []string
		for _, item := range list {
			if !inChoices(item, o.Choices) {
				nomatch = append(nomatch, pyStr(item))
			}
		}
		if len(nomatch) > 0 {
			v.fail(ctx, "value of %s must be one or more of: %s. Got no match for: %s", o.Name, strings.Join(choices, ", "), strings.Join(nomatch, ", "))
		}
		return
	}
	if !inChoices(val, o.Choices) {
		v.fail(ctx, "value of %s must be one of: %s, got: %s", o.Name, strings.Join(choices, ", "), pyStr(val))
	}
}

func (v *validation) checkPositive(o Option, params map[string]any, ctx []string) {
	if n, ok := params[o.Name].(int); o.Positive && ok && n < 1 {
		v.fail(ctx, "value of %s must be a positive number, got: %d", o.Name, n)
	}
}

func inChoices(val any, choices []any) bool {
	for _, c := range choices {
		if sameValue(val, c) {
			return true
		}
	}
	return false
}

// sameValue compares two option values the way Python's == would for the
// scalar types options carry (1 == 1.0, but "1" != 1).
func sameValue(a, b any) bool {
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	return fmt.Sprintf("%T:%v", a, a) == fmt.Sprintf("%T:%v", b, b)
}

func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case float64:
		return t, true
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	}
	return 0, false
}

func (v *validation) convertOption(o Option, val any, ctx []string) any {
	out, err := convert(o.TypeName(), val)
	if err != nil {
		v.fail(nil, "argument '%s' is of type %s%s and we were unable to convert to %s: %s", o.Name, pyType(val), foundIn(ctx), o.TypeName(), err)
		return val
	}
	if o.Elements == "" {
		return out
	}
	list, ok := out.([]any)
	if !ok || o.TypeName() != TypeList {
		v.fail(ctx, "Invalid type %s for option '%s', elements value check is supported only with 'list' type", o.TypeName(), o.Name)
		return out
	}
	elems := make([]any, 0, len(list))
	for _, e := range list {
		c, err := convert(o.Elements, e)
		if err != nil {
			v.errors = append(v.errors, fmt.Sprintf("Elements value for option '%s'%s is of type %s and we were unable to convert to %s: %s",
				o.Name, foundInQuoted(ctx), pyType(e), o.Elements, err))
			continue
		}
		elems = append(elems, c)
	}
	return elems
}

func foundIn(ctx []string) string {
	if len(ctx) == 0 {
		return ""
	}
	return " found in '" + strings.Join(ctx, " -> ") + "'."
}

func foundInQuoted(ctx []string) string {
	if len(ctx) == 0 {
		return ""
	}
	return " found in '" + strings.Join(ctx, " -> ") + "'"
}

func (v *validation) validateSubOptions(o Option, val any, ctx []string) any {
	sub := o.subSpec()
	subctx := append(append([]string{}, ctx...), o.Name)
	switch t := val.(type) {
	case map[string]any:
		return v.validate(sub, t, subctx)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				v.fail(subctx, "value of %s must be a list of dicts, got an element of type %s", o.Name, pyType(e))
				return val
			}
			out[i] = v.validate(sub, m, subctx)
		}
		return out
	}
	return val
}

// Valid Ansible booleans, in the order AnsibleModule lists them.
var (
	booleansTrue  = []string{"y", "yes", "on", "1", "true", "t"}
	booleansFalse = []string{"n", "no", "off", "0", "false", "f"}
)

func convert(t Type, val any) (any, error) {
	switch t {
	case TypeStr:
		s, err := toStr(val)
		if err != nil {
			return nil, err
		}
		return s, nil
	case TypePath:
		s, err := toStr(val)
		if err != nil {
			return nil, err
		}
		return expandPath(s), nil
	case TypeBool:
		return toBool(val)
	case TypeInt:
		return toInt(val)
	case TypeFloat:
		return toFloat(val)
	case TypeList:
		return toList(val)
	case TypeDict:
		return toDict(val)
	case TypeRaw:
		return val, nil
	}
	return nil, fmt.Errorf("unknown type %q", t)
}

func toStr(val any) (string, error) {
	switch t := val.(type) {
	case string:
		return t, nil
	case json.Number:
		return t.String(), nil
	case bool, int, int64, float64:
		return pyStr(t), nil
	}
	return "", fmt.Errorf("%s cannot be converted to a str", pyType(val))
}

func toBool(val any) (any, error) {
	var s string
	switch t := val.(type) {
	case bool:
		return t, nil
	case string:
		s = strings.ToLower(strings.TrimSpace(t))
	case json.Number, int, int64, float64:
		f, _ := number(t)
		switch f {
		case 1:
			return true, nil
		case 0:
			return false, nil
		}
		s = fmt.Sprint(t)
	default:
		return nil, fmt.Errorf("%s cannot be converted to a bool", pyType(val))
	}
	for _, b := range booleansTrue {
		if s == b {
			return true, nil
		}
	}
	for _, b := range booleansFalse {
		if s == b {
			return false, nil
		}
	}
	all := make([]string, 0, 12)
	for _, b := range append(append([]string{}, booleansTrue...), booleansFalse...) {
		all = append(all, "'"+b+"'")
	}
	return nil, fmt.Errorf("The value '%v' is not a valid boolean.  Valid booleans include: %s", val, strings.Join(all, ", "))
}

func toInt(val any) (any, error) {
	switch t := val.(type) {
	case int:
		return t, nil
	case int64:
		return int(t), nil
	case json.Number:
		if i, err := strconv.Atoi(t.String()); err == nil {
			return i, nil
		}
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			return i, nil
		}
	}
	return nil, fmt.Errorf("%s cannot be converted to an int", pyType(val))
}

func toFloat(val any) (any, error) {
	switch t := val.(type) {
	case float64:
		return t, nil
	case int:
		return float64(t), nil
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return f, nil
		}
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%s cannot be converted to a float", pyType(val))
}

func toList(val any) (any, error) {
	switch t := val.(type) {
	case []any:
		return t, nil
	case string:
		parts := strings.Split(t, ",")
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case json.Number, int, float64:
		return []any{fmt.Sprint(t)}, nil
	}
	return nil, fmt.Errorf("%s cannot be converted to a list", pyType(val))
}

func toDict(val any) (any, error) {
	switch t := val.(type) {
	case map[string]any:
		return t, nil
	case string:
		if strings.HasPrefix(t, "{") {
			var m map[string]any
			dec := json.NewDecoder(strings.NewReader(t))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("unable to evaluate string as dictionary")
			}
			return m, nil
		}
		if strings.Contains(t, "=") {
			return keyValueDict(t)
		}
		return nil, fmt.Errorf("dictionary requested, could not parse JSON or key=value")
	}
	return nil, fmt.Errorf("%s cannot be converted to a dict", pyType(val))
}

// keyValueDict parses "k1=v1, k2='v 2'" as check_type_dict does.
func keyValueDict(s string) (any, error) {
	var fields []string
	var buf strings.Builder
	var quote rune
	escaped := false
	for _, c := range strings.TrimSpace(s) {
		switch {
		case escaped:
			buf.WriteRune(c)
			escaped = false
		case c == '\\':
			escaped = true
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == ',' || c == ' '):
			if buf.Len() > 0 {
				fields = append(fields, buf.String())
			}
			buf.Reset()
		default:
			buf.WriteRune(c)
		}
	}
	if buf.Len() > 0 {
		fields = append(fields, buf.String())
	}
	out := map[string]any{}
	for _, f := range fields {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("dictionary update sequence element %q has no '='", f)
		}
		out[k] = val
	}
	return out, nil
}

// expandPath expands $VAR, ${VAR} (unknown ones left as written) and a
// leading ~, as os.path.expanduser(os.path.expandvars(p)) does.
func expandPath(p string) string {
	p = os.Expand(p, func(name string) string {
		if val, ok := os.LookupEnv(name); ok {
			return val
		}
		return "${" + name + "}"
	})
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	return p
}

// pyType names a value's type as Python would print type(value).
func pyType(val any) string {
	name := "NoneType"
	switch t := val.(type) {
	case string:
		name = "str"
	case bool:
		name = "bool"
	case int, int64:
		name = "int"
	case float64:
		name = "float"
	case json.Number:
		name = "float"
		if _, err := strconv.Atoi(t.String()); err == nil {
			name = "int"
		}
	case []any:
		name = "list"
	case map[string]any:
		name = "dict"
	}
	return "<class '" + name + "'>"
}

// pyStr formats a scalar as Python's str() would.
func pyStr(val any) string {
	switch t := val.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e16 {
			return strconv.FormatFloat(t, 'f', 1, 64)
		}
		return strconv.FormatFloat(t, 'g', -1, 64)
	}
	return fmt.Sprint(val)
}
