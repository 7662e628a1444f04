package ansible

import (
	"os"
	"strings"
)

// Format is a shape a str (or path) option's value must have, beyond its
// type; a list of str checks each element.
type Format string

// Formats the validator checks.
const (
	// FormatNamespace is a Kubernetes namespace name (an RFC 1123 label).
	FormatNamespace Format = "namespace"
	// FormatObjectName is a Kubernetes object name (an RFC 1123 subdomain).
	FormatObjectName Format = "object name"
	// FormatNamespacedName is namespace/name.
	FormatNamespacedName Format = "namespace/name"
	// FormatFile is an existing regular file.
	FormatFile Format = "file"
)

// Describe says what the format asks for, for messages and docs.
func (f Format) Describe() string {
	switch f {
	case FormatNamespace:
		return "a Kubernetes namespace name (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit)"
	case FormatObjectName:
		return "a Kubernetes object name (at most 253 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit)"
	case FormatNamespacedName:
		return "namespace/name, each a Kubernetes name"
	case FormatFile:
		return "an existing file"
	}
	return string(f)
}

// formats holds the checks of formats a module declares for itself.
var formats = map[Format]func(string) bool{}

// RegisterFormat adds a format of a module's own (say, "a k3s release such
// as v1.36.2+k3s1"): its description is its name, valid tells a value that
// has it. Call it from an init function.
func RegisterFormat(f Format, valid func(string) bool) {
	formats[f] = valid
}

// check returns why s does not have the format, or "".
func (f Format) check(s string) string {
	if valid, ok := formats[f]; ok && !valid(s) {
		return "does not match"
	}
	switch f {
	case FormatNamespace:
		if !isDNSLabel(s, 63) {
			return "not a namespace name"
		}
	case FormatObjectName:
		if !isDNSSubdomain(s) {
			return "not an object name"
		}
	case FormatNamespacedName:
		ns, name, ok := strings.Cut(s, "/")
		if !ok || !isDNSLabel(ns, 63) || !isDNSSubdomain(name) {
			return "not namespace/name"
		}
	case FormatFile:
		info, err := os.Stat(s)
		switch {
		case os.IsNotExist(err):
			return "no such file"
		case err != nil:
			return err.Error()
		case info.IsDir():
			return "a directory"
		}
	}
	return ""
}

func isDNSLabel(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if !isDNSLabel(label, 253) {
			return false
		}
	}
	return true
}

// checkFormat fails when the option's value (or an element of it) does
// not have the option's format.
func (v *validation) checkFormat(o Option, params map[string]any, ctx []string) {
	if o.Format == "" {
		return
	}
	values := []any{params[o.Name]}
	if list, ok := params[o.Name].([]any); ok {
		values = list
	} else if params[o.Name] == "" && !o.Required {
		return // an optional option left empty (a role's variable) is unset
	}
	for _, val := range values {
		s, ok := val.(string)
		if !ok {
			continue
		}
		if why := o.Format.check(s); why != "" {
			v.fail(ctx, "value of %s must be %s, got: %s (%s)", o.Name, o.Format.Describe(), s, why)
			return
		}
	}
}
