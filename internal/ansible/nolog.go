package ansible

import "slices"

// rawNoLogValues lists every no_log value in the arguments as given, before
// any check, so that no failure path can return one unmasked (as
// AnsibleModule collects no_log values before it validates). It walks the
// whole spec: nested dicts, lists of dicts, lists of lists, dicts given as
// JSON or k=v strings, aliases, and an unknown key that is one slip away from
// an option's name (a misspelt `pasword` still holds a password).
func rawNoLogValues(options []Option, params map[string]any) []string {
	var out []string
	for key, val := range params {
		for _, o := range optionsFor(options, key) {
			out = append(out, optionNoLogValues(o, val)...)
		}
	}
	return out
}

// optionNoLogValues lists the no_log values inside one option's raw value.
func optionNoLogValues(o Option, val any) []string {
	var out []string
	if o.NoLog {
		out = append(out, ScalarStrings(val)...)
	}
	if o.NoLogValues != nil && val != nil {
		out = append(out, o.NoLogValues(val)...)
		if s, ok := val.(string); ok {
			if d, err := toDict(s); err == nil {
				out = append(out, o.NoLogValues(d)...)
			}
		}
	}
	if len(o.Options) > 0 {
		out = append(out, subNoLogValues(o.Options, val)...)
	}
	return out
}

// subNoLogValues walks a value meant to hold sub-options, whatever its
// shape turned out to be.
func subNoLogValues(options []Option, val any) []string {
	switch t := val.(type) {
	case map[string]any:
		return rawNoLogValues(options, t)
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, subNoLogValues(options, e)...)
		}
		return out
	case string:
		if d, err := toDict(t); err == nil {
			return subNoLogValues(options, d)
		}
	}
	return nil
}

// optionsFor returns the options a key stands for: the one it names (or an
// alias of), else every option it is one slip away from.
func optionsFor(options []Option, key string) []Option {
	for _, o := range options {
		if o.Name == key || slices.Contains(o.Aliases, key) {
			return []Option{o}
		}
	}
	var out []Option
	for _, o := range options {
		for _, name := range append([]string{o.Name}, o.Aliases...) {
			if OneSlip(key, name) {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

// OneSlip tells whether a and b differ by one typing slip: one letter
// added, dropped or changed, or two neighbours swapped. Equal strings are
// not a slip.
func OneSlip(a, b string) bool {
	if a == b {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	switch len(b) - len(a) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if a[i+1:] == b[i+1:] {
			return true // one changed
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}

// What a diff shows in place of a secret value: nothing derived from the
// value (a hash of a weak secret in a CI log could be tested against
// guesses), only whether it changed.
const (
	Redacted        = "<redacted>"
	RedactedChanged = "<redacted, changed>"
)

// RedactedAs is the placeholder for a secret that changed or not.
func RedactedAs(changed bool) string {
	if changed {
		return RedactedChanged
	}
	return Redacted
}
