package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// Module describes a module: its options (the spec) and the prose that goes
// into its docs.
type Module struct {
	Name             string
	ShortDescription string
	Description      []string
	Notes            []string
	Author           []string
	Spec             Spec
	// CheckMode and DiffMode describe the support level for the docs'
	// attributes: "full", "partial" or "none".
	CheckMode string
	DiffMode  string
	// Platforms is the docs' platform attribute: where the module runs
	// ("linux" for the node modules; empty: "posix", the controller's).
	Platforms string
	Examples  string
	Returns   []Return
}

// Request is one invocation: validated options and Ansible's task settings.
type Request struct {
	Module    string
	Params    map[string]any
	CheckMode bool
	Diff      bool
	NoLog     bool
	Verbosity int
	TmpDir    string

	secrets  []string
	warnings []string
	progress []string
	started  time.Time
}

// Progress records what a long step is doing (what is awaited, its
// current condition). Ansible shows no output while a module runs, so the
// lines are returned as the result's progress key, which ansible-playbook
// prints under -v. A line equal to the previous one is not repeated.
func (r *Request) Progress(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if n := len(r.progress); n > 0 && strings.HasSuffix(r.progress[n-1], "] "+line) {
		return
	}
	r.progress = append(r.progress, fmt.Sprintf("[%5.1fs] %s", time.Since(r.started).Seconds(), line))
}

// Decode fills out (a pointer to a struct with json tags) from the
// validated options.
func (r *Request) Decode(out any) error {
	raw, err := json.Marshal(r.Params)
	if err != nil {
		return fmt.Errorf("encode options: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decode options: %w", err)
	}
	return nil
}

// AddSecret registers a value that must never appear in the result, for
// secrets that do not come from a no_log option (a token read from a file).
func (r *Request) AddSecret(value string) {
	if value != "" {
		r.secrets = append(r.secrets, value)
	}
}

// Warn adds a warning that Ansible shows after the task.
func (r *Request) Warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// Result is what a module returns. Values holds module-specific keys.
type Result struct {
	Changed      bool
	Msg          string
	Diff         []Diff
	Warnings     []string
	Deprecations []Deprecation
	Values       map[string]any
}

// Set records a module-specific return value.
func (r *Result) Set(key string, value any) {
	if r.Values == nil {
		r.Values = map[string]any{}
	}
	r.Values[key] = value
}

// Diff is one before/after pair shown by --diff.
type Diff struct {
	Before       string `json:"before"`
	After        string `json:"after"`
	BeforeHeader string `json:"before_header,omitempty"`
	AfterHeader  string `json:"after_header,omitempty"`
}

// Deprecation is one entry of the result's deprecations.
type Deprecation struct {
	Msg            string `json:"msg"`
	Version        string `json:"version,omitempty"`
	Date           string `json:"date,omitempty"`
	CollectionName string `json:"collection_name,omitempty"`
}

// RunFunc is a module's body. A returned error fails the task with its
// text as msg; the Result's values are still returned beside it.
type RunFunc func(ctx context.Context, req *Request) (*Result, error)

// Internal keys that Ansible adds to every args file.
const (
	keyCheckMode = "_ansible_check_mode"
	keyDiff      = "_ansible_diff"
	keyNoLog     = "_ansible_no_log"
	keyVerbosity = "_ansible_verbosity"
	keyTmpDir    = "_ansible_tmpdir"
)

// Placeholders Python's AnsibleModule uses when it masks a no_log value.
const (
	noLogPlaceholder = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
	noLogMask        = "********"
)

// Input is what a binary module is started with: Ansible's own `<module>
// <args-file>`, or `<module> -` with the args on standard input, as the
// collection's action plugins send them when pipelining is on (one command
// per task, as Ansible pipelines Python modules).
type Input struct {
	Args  []string // the command-line arguments after the program's name
	Stdin io.Reader
}

// Main runs a module as Ansible calls a binary one and exits: 0 on
// success, 1 on failure.
func Main(m *Module, run RunFunc) {
	// Anything else printed to stdout would corrupt the one JSON object
	// Ansible reads, so stdout is kept for the result alone.
	out := os.Stdout
	os.Stdout = os.Stderr
	os.Exit(Execute(context.Background(), m, Input{Args: os.Args[1:], Stdin: os.Stdin}, out, run))
}

// Execute runs the module with the given input, writes the JSON result to
// out and returns the exit code.
func Execute(ctx context.Context, m *Module, in Input, out io.Writer, run RunFunc) int {
	raw, err := in.read()
	return execute(ctx, m, raw, err, out, run)
}

// execute runs the module on the args read (or reports why they could not
// be read) and writes its result.
func execute(ctx context.Context, m *Module, raw map[string]any, readErr error, out io.Writer, run RunFunc) int {
	result, secrets := invoke(ctx, m, raw, readErr, run)
	return writeResult(out, result, secrets)
}

// invoke runs the module: its result, not yet masked, and the secrets to
// mask in it.
func invoke(ctx context.Context, m *Module, raw map[string]any, readErr error, run RunFunc) (result map[string]any, secrets []string) {
	var req *Request
	defer func() {
		if p := recover(); p != nil {
			result = map[string]any{
				"failed":    true,
				"msg":       crashed(m.Name, p),
				"exception": string(debug.Stack()),
			}
		}
		if req != nil {
			secrets = req.secrets
		}
	}()

	if readErr != nil {
		return failure("module %s: %v", m.Name, readErr), nil
	}
	var ok bool
	req, result, ok = prepare(m, raw)
	if !ok {
		return result, nil
	}
	res, err := run(ctx, req)
	result = req.result(res, err)
	result["invocation"] = map[string]any{"module_args": maskParams(req.Params, req.secrets)}
	return result, nil
}

// Step is a module run in this process as a step of another's
// (Request.RunStep): its typed result, and its failure.
type Step struct {
	Result   *Result  // what its run returned; never nil
	Err      error    // why it failed: its arguments, or its run
	Warnings []string // its validation's and its result's
	Progress []string // its progress lines, kept as a module's own are: at -v or on failure
}

// RunStep runs module m in this process, as a step of the module r belongs
// to (k3s_node renders k3s's config with module k3s_config first: one
// command on the node instead of two). args are m's options, validated
// against m's spec; r's check, diff and verbosity modes apply. m's secrets
// join r's, so that no part of r's result shows them.
func (r *Request) RunStep(ctx context.Context, m *Module, run RunFunc, args map[string]any) Step {
	return r.runStep(ctx, m, run, args, r.CheckMode)
}

// PlanStep is RunStep in check mode, whatever r's: what the step would do,
// nothing changed, for a module that decides everything before it writes.
func (r *Request) PlanStep(ctx context.Context, m *Module, run RunFunc, args map[string]any) Step {
	return r.runStep(ctx, m, run, args, true)
}

func (r *Request) runStep(ctx context.Context, m *Module, run RunFunc, args map[string]any, checkMode bool) (step Step) {
	raw := map[string]any{keyCheckMode: checkMode, keyDiff: r.Diff, keyNoLog: r.NoLog, keyVerbosity: r.Verbosity, keyTmpDir: r.TmpDir}
	for k, v := range args {
		if !strings.HasPrefix(k, "_ansible_") {
			raw[k] = v
		}
	}
	sub, failed, ok := prepare(m, raw)
	// Deferred: its run may add secrets too (Request.AddSecret).
	defer func() { r.secrets = append(r.secrets, sub.secrets...) }()
	if !ok {
		msg, _ := failed["msg"].(string)
		return Step{Result: &Result{}, Err: errors.New(msg), Warnings: sub.warnings}
	}
	defer func() {
		if p := recover(); p != nil {
			step = Step{Result: &Result{}, Err: errors.New(crashed(m.Name, p))}
		}
	}()
	res, err := run(ctx, sub)
	if res == nil {
		res = &Result{}
	}
	return Step{Result: res, Err: err, Warnings: append(append([]string{}, sub.warnings...), res.Warnings...), Progress: sub.shownProgress(err)}
}

// Fields are the step's result as its module would return it alone, less
// its diff and warnings, which join the outer module's own.
func (s Step) Fields() map[string]any {
	out := fields(s.Result, s.Err)
	if len(s.Progress) > 0 {
		out["progress"] = s.Progress
	}
	return out
}

// NoLogValuesOf picks module m's secrets out of a dict of its options, as
// m would mask them: for an option that holds another module's arguments.
func NoLogValuesOf(m *Module) func(value any) []string {
	return func(value any) []string { return subNoLogValues(m.Spec.Options, value) }
}

// prepare validates the args; on failure it returns the failure result and
// false (the request, if any, still holds the secrets).
func prepare(m *Module, raw map[string]any) (*Request, map[string]any, bool) {
	req := &Request{Module: m.Name, started: time.Now()}
	options := map[string]any{}
	for k, val := range raw {
		if !strings.HasPrefix(k, "_ansible_") {
			options[k] = val
			continue
		}
		switch k {
		case keyCheckMode:
			req.CheckMode = truthy(val)
		case keyDiff:
			req.Diff = truthy(val)
		case keyNoLog:
			req.NoLog = truthy(val)
		case keyVerbosity:
			n, _ := toInt(val)
			req.Verbosity, _ = n.(int)
		case keyTmpDir:
			req.TmpDir, _ = val.(string)
		}
	}
	// The raw arguments first: a check that fails below returns before the
	// sub-options it would have walked.
	v := &validation{module: m.Name, noLog: rawNoLogValues(m.Spec.Options, options)}
	req.Params = v.validate(m.Spec, options, nil)
	req.secrets = v.noLog
	req.warnings = v.warnings
	if len(v.errors) > 0 {
		res := failure("%s", v.errors[0])
		res["invocation"] = map[string]any{"module_args": maskParams(req.Params, req.secrets)}
		return req, res, false
	}
	return req, nil, true
}

// read reads the args: one JSON object, from the args file or standard
// input.
func (in Input) read() (map[string]any, error) {
	if len(in.Args) != 1 {
		return nil, fmt.Errorf("expects the path of an args file as its only argument (Ansible runs binary modules as `<module> <args-file>`), or - for the args on standard input; got %d arguments", len(in.Args))
	}
	source := "args file " + in.Args[0]
	var data []byte
	var err error
	if in.Args[0] == "-" {
		source = "args on standard input"
		if in.Stdin == nil {
			return nil, fmt.Errorf("read %s: no standard input", source)
		}
		data, err = io.ReadAll(in.Stdin)
	} else {
		data, err = os.ReadFile(in.Args[0])
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", source, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s holds more than one JSON value", source)
	}
	if raw == nil {
		return nil, fmt.Errorf("%s is not a JSON object: null", source)
	}
	return raw, nil
}

func truthy(val any) bool {
	b, err := toBool(val)
	return err == nil && b.(bool)
}

func failure(format string, args ...any) map[string]any {
	return map[string]any{"failed": true, "msg": fmt.Sprintf(format, args...)}
}

func (r *Request) result(res *Result, err error) map[string]any {
	if res == nil {
		res = &Result{}
	}
	out := fields(res, err)
	if r.Diff && len(res.Diff) == 1 {
		out["diff"] = res.Diff[0]
	} else if r.Diff && len(res.Diff) > 1 {
		out["diff"] = res.Diff
	}
	if w := append(append([]string{}, r.warnings...), res.Warnings...); len(w) > 0 {
		out["warnings"] = w
	}
	if p := r.shownProgress(err); p != nil {
		out["progress"] = p
	}
	return out
}

// fields are a run's result as a module returns it, less its diff and
// warnings: its values, changed, msg, failed with the error's message, and
// deprecations.
func fields(res *Result, err error) map[string]any {
	out := make(map[string]any, len(res.Values)+4)
	maps.Copy(out, res.Values)
	out["changed"] = res.Changed
	if res.Msg != "" {
		out["msg"] = res.Msg
	}
	if err != nil {
		out["failed"] = true
		out["msg"] = err.Error()
	}
	if len(res.Deprecations) > 0 {
		out["deprecations"] = res.Deprecations
	}
	return out
}

// shownProgress is the progress lines a result shows: at -v, or when the
// run failed (they then say how far it got); nil otherwise.
func (r *Request) shownProgress(err error) []string {
	if len(r.progress) > 0 && (r.Verbosity > 0 || err != nil) {
		return r.progress
	}
	return nil
}

// crashed is the message of a module whose run panicked.
func crashed(name string, p any) string {
	return fmt.Sprintf("module %s crashed (a bug; please report it): %v", name, p)
}

// maskParams returns the parameters for invocation.module_args: a value
// equal to a secret becomes Ansible's placeholder.
func maskParams(params map[string]any, secrets []string) map[string]any {
	masked, _ := scrub(params, secrets).(map[string]any)
	return masked
}

// scrub replaces secrets anywhere in v, as AnsibleModule's remove_values
// does: a value that is a secret becomes the placeholder, a string that
// contains one has it replaced by asterisks.
func scrub(v any, secrets []string) any {
	switch t := v.(type) {
	case string:
		for _, s := range secrets {
			if t == s {
				return noLogPlaceholder
			}
		}
		for _, s := range secrets {
			t = strings.ReplaceAll(t, s, noLogMask)
		}
		return t
	case json.Number:
		if s := scrub(t.String(), secrets).(string); s != t.String() {
			return s
		}
		return t
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = scrub(e, secrets)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = scrub(e, secrets)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = scrub(e, secrets)
		}
		return out
	}
	return v
}

// writeResult prints the result as one JSON object, with every secret
// scrubbed, and returns the exit code.
func writeResult(out io.Writer, result map[string]any, secrets []string) int {
	// Module-specific values may be structs: round-trip them through JSON
	// so that scrubbing sees every string.
	var generic map[string]any
	raw, err := json.Marshal(result)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		err = dec.Decode(&generic)
	}
	if err != nil {
		generic = failure("encode module result: %v", err)
	}
	// Longest first, so a secret that contains another is masked whole.
	sorted := append([]string{}, secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	generic, _ = scrub(generic, sorted).(map[string]any)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		fmt.Fprintf(os.Stderr, "write module result: %v\n", err)
		return 1
	}
	if failed, _ := generic["failed"].(bool); failed {
		return 1
	}
	return 0
}
