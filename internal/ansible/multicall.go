package ansible

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Entry is one module of a multi-call binary.
type Entry struct {
	Module *Module
	Run    RunFunc
}

// MainMulti runs the module a multi-call binary is asked for, and exits.
// One binary serves several modules (the controller-side ones share
// client-go, and one binary serves them at the size of the largest): the
// module is the last part of _ansible_module_name in the args file (Ansible
// sets it), else the binary's own name (a link named after the module;
// Ansible's remote copies are named AnsiballZ_<module>).
func MainMulti(entries map[string]Entry) {
	out := os.Stdout
	os.Stdout = os.Stderr
	os.Exit(ExecuteMulti(context.Background(), entries, os.Args, os.Stdin, out))
}

// ExecuteMulti is MainMulti with its arguments (argv, with the program
// first), standard input and output given. The args are read once: they
// name the module and are its input.
func ExecuteMulti(ctx context.Context, entries map[string]Entry, argv []string, stdin io.Reader, out io.Writer) int {
	var raw map[string]any
	var err error
	if len(argv) > 0 {
		raw, err = Input{Args: argv[1:], Stdin: stdin}.read()
	}
	name := moduleName(argv, raw)
	e, ok := entries[name]
	if !ok {
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		sort.Strings(names)
		return writeResult(out, failure("this binary serves the modules %s, not %q (from _ansible_module_name or the program's name)", strings.Join(names, ", "), name), nil)
	}
	return execute(ctx, e.Module, raw, err, out, e.Run)
}

// moduleName is the module a multi-call binary runs as: from the args,
// else from the program's name.
func moduleName(argv []string, raw map[string]any) string {
	if n, ok := raw["_ansible_module_name"].(string); ok && n != "" {
		return n[strings.LastIndex(n, ".")+1:]
	}
	if len(argv) == 0 {
		return ""
	}
	return strings.TrimPrefix(filepath.Base(argv[0]), "AnsiballZ_")
}
