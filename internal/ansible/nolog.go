package ansible

import (
	"net/url"
	"slices"
	"strings"
)

// rawNoLogValues lists every no_log value in the arguments as given, before
// any check, so that no failure path can return one unmasked (as
// AnsibleModule collects no_log values before it validates). It walks the
// whole spec: nested dicts, lists of dicts, lists of lists, dicts given as
// JSON or k=v strings, aliases, and an unknown key that is one slip away from
// an option's name (a misspelt `pasword` still holds a password).
func rawNoLogValues(options []Option, params map[string]any) []string {
	var out []string
	secretsHere := slices.ContainsFunc(options, func(o Option) bool { return o.NoLog })
	for key, val := range params {
		matched := optionsFor(options, key)
		for _, o := range matched {
			out = append(out, optionNoLogValues(o, val)...)
		}
		// An unknown key beside a no_log option, misspelt beyond one slip
		// (clientSecret for client_secret, stringData for string_data), is masked
		// when its name says it holds a secret.
		if len(matched) == 0 && secretsHere && (SecretName(key) || slices.ContainsFunc(options, func(o Option) bool { return o.NoLog && fold(o.Name) == fold(key) })) {
			out = append(out, guessedSecrets(val)...)
		}
	}
	return out
}

// secretWords are what a key's name holds when its value is a secret.
var secretWords = []string{"secret", "token", "password", "passwd", "key", "credential", "auth"}

// fold is a key's name without case, '_' and '-': clientSecret, client_secret
// and client-secret are one.
func fold(name string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
}

// SecretName tells whether a key's name says it holds a secret.
func SecretName(key string) bool {
	f := fold(key)
	return slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(f, w) })
}

// guessedSecrets are the strings in a value taken for a secret by its key's
// name alone, less those no secret is (a few characters, a yes or a no):
// masked, every occurrence of such a value in the output would be.
func guessedSecrets(val any) []string {
	var out []string
	for _, v := range ScalarStrings(val) {
		if len(v) >= 4 && !slices.Contains([]string{"true", "false", "null", "none"}, strings.ToLower(v)) {
			out = append(out, v)
		}
	}
	return out
}

// secretKeyValues lists the values under every key whose name says it holds
// a secret (SecretName), at any depth of a free-form dict that holds secrets
// (k3s's config, registry credentials): agentToken, auth.passwd. A module's
// own NoLogValues know the right names; this catches any spelling.
func secretKeyValues(val any) []string {
	var out []string
	switch t := val.(type) {
	case map[string]any:
		for key, v := range t {
			if _, block := v.(map[string]any); SecretName(key) && !block {
				out = append(out, guessedSecrets(v)...)
			} else {
				out = append(out, secretKeyValues(v)...)
			}
		}
	case []any:
		for _, e := range t {
			out = append(out, secretKeyValues(e)...)
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
		out = append(out, secretKeyValues(val)...)
		if s, ok := val.(string); ok {
			if d, err := toDict(s); err == nil {
				out = append(out, o.NoLogValues(d)...)
				out = append(out, secretKeyValues(d)...)
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

// URLPasswords is the password of a URL's userinfo (http://user:pw@host) in
// every form it can take in an output: as written, percent-decoded, and
// percent-encoded again as Go's url package, a query and a path would write
// it. A password holding @ : / # % must be written encoded, so masking only
// one form leaves the other shown. A URL that does not parse still has its
// password found: the authority is then taken to reach its last @.
func URLPasswords(raw string) []string {
	s := strings.Trim(strings.TrimSpace(raw), `'"`)
	if !strings.Contains(s, "://") {
		s = "http://" + s // as Go's and curl's proxy variables read "user:pw@proxy:3128"
	}
	_, rest, _ := strings.Cut(s, "://")
	if u, err := url.Parse(s); err == nil {
		if u.User == nil {
			return nil
		}
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[:i]
		}
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	_, written, ok := strings.Cut(rest[:at], ":")
	if !ok || written == "" {
		return nil
	}
	decoded, err := url.PathUnescape(written)
	if err != nil {
		decoded = written
	}
	var out []string
	for _, form := range []string{written, decoded, strings.TrimPrefix(url.UserPassword("", decoded).String(), ":"), url.QueryEscape(decoded), url.PathEscape(decoded)} {
		if form != "" && !slices.Contains(out, form) {
			out = append(out, form)
		}
	}
	return out
}

// URLPasswordsIn are the URL passwords (URLPasswords) in v: a string, or the
// strings of a dict or list at any depth (a file's text too), each word
// with a scheme (://) taken for a URL.
func URLPasswordsIn(v any) []string {
	var out []string
	for _, s := range ScalarStrings(v) {
		for _, word := range strings.Fields(s) {
			if strings.Contains(word, "://") {
				out = append(out, URLPasswords(word)...)
			}
		}
	}
	return out
}
