// Package ansible implements the binary-module protocol of Ansible: it reads the
// args file, validates options against a spec declared once in Go (with the
// rules and wording of Python's AnsibleModule), and writes exactly one JSON
// result with no_log values masked.
package ansible

// Type is an option type, named as in an Ansible argument spec.
type Type string

// Option types supported by the validator.
const (
	TypeStr   Type = "str"
	TypeBool  Type = "bool"
	TypeInt   Type = "int"
	TypeFloat Type = "float"
	TypePath  Type = "path"
	TypeList  Type = "list"
	TypeDict  Type = "dict"
	TypeRaw   Type = "raw"
)

// Option declares one module option. It is the source of truth for
// validation and for the module's Python file (docs and argument spec).
// (Role argument specs are written by hand; tests/roles holds them to the
// roles' defaults.)
type Option struct {
	Name     string
	Type     Type // defaults to str
	Elements Type // element type for lists
	Required bool
	Default  any
	Choices  []any
	// Positive requires an int option to be at least 1 (timeouts, counts).
	Positive bool
	// Format is a shape a str value (or each element of a list) must have.
	Format  Format
	Aliases []string
	NoLog   bool
	// NotSecret says that an option named like a secret (ansible-test's
	// validate-modules guesses from names such as key, secret or token) is
	// not one: a list of Secret names, or a dict whose secret sub-options
	// are NoLog themselves. The Python argument spec says no_log=False.
	NotSecret bool
	// NoLogValues picks the secrets out of a value that is not secret as a
	// whole (a dict of flags holding one token); they are masked like no_log.
	NoLogValues func(value any) []string
	Options     []Option // sub-options of a dict, or of each dict in a list
	Description []string
	// Sub-option constraints, applied inside each dict.
	MutuallyExclusive [][]string
	RequiredTogether  [][]string
	RequiredOneOf     [][]string
	RequiredIf        []RequiredIf
}

// RequiredIf says: when Key equals Value, the Requirements must be set
// (all of them, or at least one when AnyOf).
type RequiredIf struct {
	Key          string
	Value        any
	Requirements []string
	AnyOf        bool
}

// Spec is a module's whole argument spec.
type Spec struct {
	Options           []Option
	MutuallyExclusive [][]string
	RequiredTogether  [][]string
	RequiredOneOf     [][]string
	RequiredIf        []RequiredIf
}

// TypeName is the option's type, str when not declared.
func (o Option) TypeName() Type {
	if o.Type == "" {
		return TypeStr
	}
	return o.Type
}

// Return documents one key of a module's result.
type Return struct {
	Name        string
	Description []string
	Returned    string
	Type        string
	Sample      any
	Contains    []Return
}

// subSpec is the constraint set applied to the sub-options of o.
func (o Option) subSpec() Spec {
	return Spec{
		Options:           o.Options,
		MutuallyExclusive: o.MutuallyExclusive,
		RequiredTogether:  o.RequiredTogether,
		RequiredOneOf:     o.RequiredOneOf,
		RequiredIf:        o.RequiredIf,
	}
}
