package ansible_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
)

var testModule = &ansible.Module{
	Name: "demo",
	Spec: ansible.Spec{
		Options: []ansible.Option{
			{Name: "name", Required: true, Aliases: []string{"n"}},
			{Name: "enabled", Type: ansible.TypeBool, Default: false},
			{Name: "count", Type: ansible.TypeInt, Positive: true},
			{Name: "ratio", Type: ansible.TypeFloat},
			{Name: "dest", Type: ansible.TypePath},
			{Name: "state", Choices: []any{"present", "absent"}, Default: "present"},
			{Name: "tags", Type: ansible.TypeList, Elements: ansible.TypeStr},
			{Name: "ports", Type: ansible.TypeList, Elements: ansible.TypeInt},
			{Name: "extra", Type: ansible.TypeRaw},
			{Name: "labels", Type: ansible.TypeDict},
			{Name: "token", NoLog: true},
			{Name: "a"}, {Name: "b"},
			{Name: "user", Type: ansible.TypeDict, Options: []ansible.Option{
				{Name: "login", Required: true},
				{Name: "password", NoLog: true},
				{Name: "uid", Type: ansible.TypeInt, Default: 1000},
			}},
			// A free-form dict that holds secrets under names its module knows.
			{Name: "settings", Type: ansible.TypeDict, NoLogValues: func(any) []string { return nil }},
			{Name: "keys", Type: ansible.TypeList, Elements: ansible.TypeDict, Options: []ansible.Option{
				{Name: "name", Required: true},
				{Name: "value", NoLog: true},
			}},
		},
		MutuallyExclusive: [][]string{{"count", "ratio"}},
		RequiredTogether:  [][]string{{"a", "b"}},
		RequiredIf:        []ansible.RequiredIf{{Key: "state", Value: "absent", Requirements: []string{"dest"}}},
	},
}

// echo returns its params so tests can see the coercion.
func echo(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
	res := &ansible.Result{Changed: true}
	res.Set("params", req.Params)
	res.Set("check_mode", req.CheckMode)
	res.Set("diff_mode", req.Diff)
	return res, nil
}

func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		msg  string
	}{
		{"missing required", map[string]any{}, "missing required arguments: name"},
		{"unsupported", map[string]any{"name": "x", "nmae": "y", "zzz": 1},
			"Unsupported parameters for (demo) module: nmae, zzz. Supported parameters include: a, b, count, dest, enabled, extra, keys, labels, name, ports, ratio, settings, state, tags, token, user (n)."},
		{"bad bool", map[string]any{"name": "x", "enabled": "maybe"},
			"argument 'enabled' is of type <class 'str'> and we were unable to convert to bool: The value 'maybe' is not a valid boolean.  Valid booleans include: 'y', 'yes', 'on', '1', 'true', 't', 'n', 'no', 'off', '0', 'false', 'f'"},
		{"bad int", map[string]any{"name": "x", "count": "ten"},
			"argument 'count' is of type <class 'str'> and we were unable to convert to int: <class 'str'> cannot be converted to an int"},
		{"float is no int", map[string]any{"name": "x", "count": 1.5},
			"argument 'count' is of type <class 'float'> and we were unable to convert to int: <class 'float'> cannot be converted to an int"},
		{"bad float", map[string]any{"name": "x", "ratio": []any{1}},
			"argument 'ratio' is of type <class 'list'> and we were unable to convert to float: <class 'list'> cannot be converted to a float"},
		{"bad dict", map[string]any{"name": "x", "labels": "plain"},
			"argument 'labels' is of type <class 'str'> and we were unable to convert to dict: dictionary requested, could not parse JSON or key=value"},
		{"bad list", map[string]any{"name": "x", "tags": map[string]any{}},
			"argument 'tags' is of type <class 'dict'> and we were unable to convert to list: <class 'dict'> cannot be converted to a list"},
		{"bad element", map[string]any{"name": "x", "ports": []any{80, "http"}},
			"Elements value for option 'ports' is of type <class 'str'> and we were unable to convert to int: <class 'str'> cannot be converted to an int"},
		{"choices", map[string]any{"name": "x", "state": "gone"},
			"value of state must be one of: present, absent, got: gone"},
		{"positive", map[string]any{"name": "x", "count": 0},
			"value of count must be a positive number, got: 0"},
		{"mutually exclusive", map[string]any{"name": "x", "count": 1, "ratio": 2},
			"parameters are mutually exclusive: count|ratio"},
		{"required together", map[string]any{"name": "x", "a": "1"},
			"parameters are required together: a, b"},
		{"required if", map[string]any{"name": "x", "state": "absent"},
			"state is absent but all of the following are missing: dest"},
		{"sub-option required", map[string]any{"name": "x", "user": map[string]any{}},
			"missing required arguments: login found in user"},
		{"sub-option unsupported", map[string]any{"name": "x", "user": map[string]any{"login": "a", "pw": "b"}},
			"Unsupported parameters for (demo) module: user.pw. Supported parameters include: login, password, uid."},
		{"sub-option type", map[string]any{"name": "x", "user": map[string]any{"login": "a", "uid": "root"}},
			"argument 'uid' is of type <class 'str'> found in 'user'. and we were unable to convert to int: <class 'str'> cannot be converted to an int"},
		{"list of dicts", map[string]any{"name": "x", "keys": []any{map[string]any{"value": "v"}}},
			"missing required arguments: name found in keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, code, _ := ansibletest.Run(t, testModule, echo, tc.args)
			assert.Equal(t, 1, code)
			assert.Equal(t, true, res["failed"])
			assert.Equal(t, tc.msg, res["msg"])
		})
	}
}

func TestCoercion(t *testing.T) {
	t.Setenv("DEMO_DIR", "/srv/demo")
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	cases := []struct {
		option string
		in     any
		want   any
	}{
		{"enabled", "YES", true}, {"enabled", "off", false}, {"enabled", 1, true}, {"enabled", "0", false}, {"enabled", " True ", true},
		{"count", "42", float64(42)}, {"count", 7, float64(7)},
		{"ratio", "0.5", 0.5}, {"ratio", 2, float64(2)},
		{"dest", "~/x", filepath.Join(home, "x")}, {"dest", "$DEMO_DIR/a", "/srv/demo/a"}, {"dest", "$UNSET_VAR_X/a", "${UNSET_VAR_X}/a"},
		{"tags", "a,b", []any{"a", "b"}}, {"tags", []any{1, true}, []any{"1", "True"}},
		{"ports", []any{"80", 443}, []any{float64(80), float64(443)}},
		{"labels", "a=1, b='x y'", map[string]any{"a": "1", "b": "x y"}},
		{"labels", `{"k": 1}`, map[string]any{"k": float64(1)}},
		{"extra", []any{1, "a"}, []any{float64(1), "a"}},
		{"state", nil, "present"},
		{"name", 12, "12"},
	}
	for _, tc := range cases {
		t.Run(tc.option, func(t *testing.T) {
			args := map[string]any{"name": "x"}
			if tc.in != nil {
				args[tc.option] = tc.in
			}
			res, code, _ := ansibletest.Run(t, testModule, echo, args)
			require.Equal(t, 0, code, res["msg"])
			assert.Equal(t, tc.want, res["params"].(map[string]any)[tc.option])
		})
	}
}

func TestAliasAndDefaults(t *testing.T) {
	res, code, _ := ansibletest.Run(t, testModule, echo, map[string]any{
		"n": "x", "user": map[string]any{"login": "me"},
	})
	require.Equal(t, 0, code)
	params := res["params"].(map[string]any)
	assert.Equal(t, "x", params["name"])
	assert.NotContains(t, params, "n")
	assert.Equal(t, false, params["enabled"])
	assert.Nil(t, params["count"])
	assert.Contains(t, params, "count", "every option is present, unset ones as null")
	assert.Equal(t, float64(1000), params["user"].(map[string]any)["uid"])

	res, _, _ = ansibletest.Run(t, testModule, echo, map[string]any{"n": "x", "name": "y"})
	assert.Equal(t, []any{"Both option name and its alias n are set."}, res["warnings"])
}

func TestNoLogMasking(t *testing.T) {
	const token, password, keyValue = "s3cr3t-token-value", "hunter2-password", "deploy-key-material"
	leaky := func(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
		req.AddSecret("file-secret-xyz")
		return &ansible.Result{Msg: "token is " + token + " and file-secret-xyz",
			Values: map[string]any{"echo": []string{password, "pre-" + keyValue}}}, errors.New("failed with " + token)
	}
	res, code, raw := ansibletest.Run(t, testModule, leaky, map[string]any{
		"name": "x", "token": token,
		"user": map[string]any{"login": "me", "password": password},
		"keys": []any{map[string]any{"name": "k", "value": keyValue}},
	})
	assert.Equal(t, 1, code)
	for _, s := range []string{token, password, keyValue, "file-secret-xyz"} {
		assert.NotContains(t, raw, s)
	}
	args := res["invocation"].(map[string]any)["module_args"].(map[string]any)
	assert.Equal(t, "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", args["token"])
	assert.Equal(t, "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", args["user"].(map[string]any)["password"])
	assert.Equal(t, "failed with ********", res["msg"])
	assert.Equal(t, []any{"VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", "pre-********"}, res["echo"])
}

func TestNoLogMaskedInValidationFailure(t *testing.T) {
	const token = "very-secret-choice"
	m := &ansible.Module{Name: "demo", Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "token", NoLog: true, Choices: []any{"a", "b"}},
	}}}
	res, code, raw := ansibletest.Run(t, m, echo, map[string]any{"token": token})
	assert.Equal(t, 1, code)
	assert.NotContains(t, raw, token)
	assert.Equal(t, "value of token must be one of: a, b, got: ********", res["msg"])
}

func TestCheckAndDiffFlags(t *testing.T) {
	differ := func(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
		res := &ansible.Result{Changed: true, Diff: []ansible.Diff{{Before: "a\n", After: "b\n", BeforeHeader: "f", AfterHeader: "f"}}}
		res.Set("check_mode", req.CheckMode)
		return res, nil
	}
	res, code, _ := ansibletest.Run(t, testModule, differ, map[string]any{"name": "x", "_ansible_check_mode": true, "_ansible_diff": true, "_ansible_verbosity": 3, "_ansible_version": "2.14.18"})
	require.Equal(t, 0, code)
	assert.Equal(t, true, res["check_mode"])
	assert.Equal(t, map[string]any{"before": "a\n", "after": "b\n", "before_header": "f", "after_header": "f"}, res["diff"])
	assert.NotContains(t, res["invocation"].(map[string]any)["module_args"], "_ansible_check_mode")

	res, _, _ = ansibletest.Run(t, testModule, differ, map[string]any{"name": "x"})
	assert.NotContains(t, res, "diff", "diff only when asked")
	assert.Equal(t, false, res["check_mode"])
}

func TestPanicBecomesFailure(t *testing.T) {
	boom := func(context.Context, *ansible.Request) (*ansible.Result, error) { panic("boom") }
	res, code, raw := ansibletest.Run(t, testModule, boom, map[string]any{"name": "x", "token": "panic-secret"})
	assert.Equal(t, 1, code)
	assert.Equal(t, true, res["failed"])
	assert.Contains(t, res["msg"], "module demo crashed")
	assert.Contains(t, res["msg"], "boom")
	assert.NotContains(t, raw, "panic-secret")
	assert.Equal(t, 1, strings.Count(raw, "\n"), "exactly one JSON object on stdout")
}

func TestArgsFileErrors(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(notJSON, []byte("name=x"), 0o600))
	array := filepath.Join(dir, "array")
	require.NoError(t, os.WriteFile(array, []byte("[1]"), 0o600))
	cases := []struct {
		name  string
		args  []string
		stdin string
		msg   string
	}{
		{"no args", nil, "", "module demo: expects the path of an args file"},
		{"missing", []string{filepath.Join(dir, "nope")}, "", "module demo: read args file " + dir + "/nope: "},
		{"not JSON", []string{notJSON}, "", "is not a JSON object"},
		{"not an object", []string{array}, "", "is not a JSON object"},
		{"stdin not JSON", []string{"-"}, "name=x", "module demo: args on standard input is not a JSON object"},
		{"stdin two values", []string{"-"}, "{} {}", "args on standard input holds more than one JSON value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			code := ansible.Execute(context.Background(), testModule, ansible.Input{Args: tc.args, Stdin: strings.NewReader(tc.stdin)}, &out, echo)
			assert.Equal(t, 1, code)
			assert.Contains(t, out.String(), `"failed":true`)
			assert.Contains(t, out.String(), tc.msg)
		})
	}
}

func TestNoLogValuesHook(t *testing.T) {
	m := &ansible.Module{Name: "demo", Spec: ansible.Spec{Options: []ansible.Option{
		{Name: "flags", Type: ansible.TypeDict, NoLogValues: func(v any) []string {
			s, _ := v.(map[string]any)["password"].(string)
			return []string{s}
		}},
		{Name: "count", Type: ansible.TypeInt},
	}}}
	res, code, raw := ansibletest.Run(t, m, echo, map[string]any{"flags": map[string]any{"password": "hook-secret"}, "count": "x"})
	assert.Equal(t, 1, code, "a failed validation still masks the hook's values")
	assert.NotContains(t, raw, "hook-secret")
	assert.Equal(t, "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", res["invocation"].(map[string]any)["module_args"].(map[string]any)["flags"].(map[string]any)["password"])
}

func TestRequiredOneOfAndAnyOf(t *testing.T) {
	m := &ansible.Module{Name: "demo", Spec: ansible.Spec{
		Options:       []ansible.Option{{Name: "src"}, {Name: "definition", Type: ansible.TypeDict}, {Name: "state", Default: "present"}, {Name: "a"}, {Name: "b"}},
		RequiredOneOf: [][]string{{"src", "definition"}},
		RequiredIf:    []ansible.RequiredIf{{Key: "state", Value: "absent", Requirements: []string{"a", "b"}, AnyOf: true}},
	}}
	res, code, _ := ansibletest.Run(t, m, echo, map[string]any{})
	assert.Equal(t, 1, code)
	assert.Equal(t, "one of the following is required: src, definition", res["msg"])

	res, code, _ = ansibletest.Run(t, m, echo, map[string]any{"src": "x", "state": "absent"})
	assert.Equal(t, 1, code)
	assert.Equal(t, "state is absent but any of the following are missing: a, b", res["msg"])

	_, code, _ = ansibletest.Run(t, m, echo, map[string]any{"src": "x", "state": "absent", "b": "1"})
	assert.Equal(t, 0, code, "any one requirement is enough")
}

func TestProgressUnderVerbosity(t *testing.T) {
	waits := func(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
		req.Progress("waiting for %s", "x")
		req.Progress("waiting for %s", "x")
		req.Progress("x is Ready")
		return &ansible.Result{}, nil
	}
	res, _, _ := ansibletest.Run(t, testModule, waits, map[string]any{"name": "n"})
	assert.NotContains(t, res, "progress", "quiet without -v")
	res, _, _ = ansibletest.Run(t, testModule, waits, map[string]any{"name": "n", "_ansible_verbosity": 1})
	progress := res["progress"].([]any)
	require.Len(t, progress, 2, "a repeated line is not repeated")
	assert.Regexp(t, `^\[ *\d+\.\ds\] waiting for x$`, progress[0])
}

// Whatever check fails first, no no_log value reaches the output: the
// values are collected from the arguments as given, before any check.
func TestNoLogMaskedWhateverFailsFirst(t *testing.T) {
	const s = "hunter2-secret-value"
	cases := map[string]map[string]any{
		"misspelt top-level option beside a sub-option secret": {"name": "x", "nmae": 1, "user": map[string]any{"login": "u", "password": s}},
		"non-dict item in a list of dicts":                     {"name": "x", "keys": []any{"plain", map[string]any{"name": "k", "value": s}}},
		"unknown sub-option beside the secret":                 {"name": "x", "user": map[string]any{"login": "u", "password": s, "shell": "sh"}},
		"misspelt no_log option":                               {"name": "x", "tokn": s},
		"misspelt no_log sub-option":                           {"name": "x", "user": map[string]any{"login": "u", "pasword": s}},
		"misspelt container of the secret":                     {"name": "x", "usr": map[string]any{"login": "u", "password": s}},
		"list of lists of dicts":                               {"name": "x", "keys": []any{[]any{map[string]any{"name": "k", "value": s}}}},
		"dict given as JSON":                                   {"name": "x", "user": `{"login": "u", "password": "` + s + `", "bad": 1}`},
		"dict given as k=v":                                    {"name": "x", "user": "login=u password=" + s + " bad=1"},
		"secret of the wrong type":                             {"name": "x", "token": []any{s, map[string]any{"k": s}}},
		"missing required beside the secret":                   {"token": s},
		"alias of a no_log option fails on another":            {"name": "x", "count": "ten", "user": map[string]any{"login": "u", "password": s}},
		// Beyond one slip: folded to the no_log option's name, or a name that says secret.
		"camelCase of a no_log sub-option":    {"name": "x", "user": map[string]any{"login": "u", "Pass_Word": s}},
		"a secret-sounding key beside no_log": {"name": "x", "user": map[string]any{"login": "u", "apiCredential": s}},
		"a secret-sounding top-level key":     {"name": "x", "token": "t0k3n-value", "clientSecretValue": s},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			res, code, raw := ansibletest.Run(t, testModule, echo, args)
			assert.Equal(t, 1, code, "the arguments are bad: %v", res["msg"])
			assert.NotContains(t, raw, s)
			assert.NotEmpty(t, res["msg"])
		})
	}
}

func TestOneSlip(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"password", "pasword", true}, {"password", "passwrod", true}, {"password", "passwordd", true},
		{"password", "passxord", true}, {"password", "password", false}, {"password", "pswd", false},
		{"token", "tokne", true}, {"token", "otken", true}, {"a", "", true}, {"ab", "ba", true}, {"abc", "cab", false},
	} {
		assert.Equal(t, tc.want, ansible.OneSlip(tc.a, tc.b), "%s/%s", tc.a, tc.b)
		assert.Equal(t, tc.want, ansible.OneSlip(tc.b, tc.a), "%s/%s", tc.b, tc.a)
	}
}

func TestURLPasswords(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"plain", "http://u:pw@proxy:3128", []string{"pw"}},
		{"written encoded, lower-case hex", "http://homelab:s3cr%40t%3apw%21@proxy.lan:3128",
			[]string{"s3cr%40t%3apw%21", "s3cr@t:pw!", "s3cr%40t%3Apw%21", "s3cr@t:pw%21"}},
		{"a space: query and path encode it apart", "http://u:a%20b@proxy", []string{"a%20b", "a b", "a+b"}},
		{"quoted, as the install script writes it", "'http://u:pw@proxy:3128'", []string{"pw"}},
		{"no scheme, as proxy variables allow", "u:pw@proxy:3128", []string{"pw"}},
		{"an @ in the path is no userinfo", "http://proxy:3128/a@b", nil},
		{"a user without a password", "http://u@proxy:3128", nil},
		{"no userinfo", "http://proxy:3128", nil},
		{"empty", "", nil},
		{"does not parse (a bad escape): still found", "http://u:pw%zz@proxy:3128", []string{"pw%zz", "pw%25zz"}},
		{"does not parse (an unencoded #): still found", "http://u:p#w@proxy:3128", []string{"p#w", "p%23w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ansible.URLPasswords(tc.url))
		})
	}
	assert.ElementsMatch(t, []string{"pw", "a%20b", "a b", "a+b"}, ansible.URLPasswordsIn(map[string]any{"proxy": "http://u:pw@p", "list": []any{"- https://u:a%20b@m:5000/x"}, "word": "u:notmine@p"}),
		"every URL at any depth, each word of a text; no word without a scheme")
}

// The protocol alone: no no_log value of the test module's spec (nested
// dicts, lists of dicts, aliases) reaches stdout, whatever the arguments.
func FuzzNoLog(f *testing.F) {
	ansibletest.FuzzNoLog(f, testModule, nil, echo)
}

func TestBadInputs(t *testing.T) {
	cases := ansibletest.BadInputs(testModule, map[string]any{"name": "x", "user": map[string]any{"login": "u", "password": "bad-input-secret"},
		"keys": []any{map[string]any{"name": "k", "value": "bad-input-secret"}}})
	ansibletest.CheckBadInputs(t, testModule, cases, "bad-input-secret")
}

// In a free-form dict that holds secrets, a key whose name says secret is
// masked at any depth, whatever its spelling (the module knows its own).
func TestNoLogSecretNamesInAFreeFormDict(t *testing.T) {
	const s = "hunter2-secret-value"
	for name, settings := range map[string]map[string]any{
		"deep":      {"registry": map[string]any{"auth": map[string]any{"passwd": s}}},
		"camelCase": {"agentToken": s},
		"in a list": {"servers": []any{map[string]any{"client-key": s}}},
	} {
		res, code, raw := ansibletest.Run(t, testModule, echo, map[string]any{"name": "x", "settings": settings})
		assert.Equal(t, 0, code, "%s: %v", name, res["msg"])
		assert.NotContains(t, raw, s, name)
	}
}

// A key taken for a secret by its name alone masks only what can be one:
// not a short word or a yes/no, which would blank every occurrence.
func TestGuessedSecretsLeaveWordsAlone(t *testing.T) {
	res, _, raw := ansibletest.Run(t, testModule, echo, map[string]any{"name": "x", "user": map[string]any{"login": "u", "authMode": "true", "apiKey": "abc"}})
	assert.Contains(t, raw, `"true"`, "%v", res)
	assert.Contains(t, raw, `"abc"`)
}
