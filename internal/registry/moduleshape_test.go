package registry

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

// moduleShape is what the shape test reads of a module's package: where
// its package doc, Entry, spec and body are declared, what it exports,
// and which tests call the ansibletest checks on its spec.
type moduleShape struct {
	docIn      []string          // the files with the package doc comment
	declaredIn map[string]string // a package-level name: its file
	exported   []string          // package-level names, methods of its own types included, tests aside
	calls      map[string]bool   // "FuzzNoLog(<spec>)", "CheckBadInputs(<spec>)" in its tests
}

// readShape parses the package in dir.
func readShape(t *testing.T, dir string) moduleShape {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err, dir)
	require.NotEmpty(t, paths, dir)
	s := moduleShape{declaredIn: map[string]string{}, calls: map[string]bool{}}
	fset := token.NewFileSet()
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		require.NoError(t, err, path)
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "FuzzNoLog" || sel.Sel.Name == "CheckBadInputs") {
					if id, ok := call.Args[1].(*ast.Ident); ok {
						s.calls[fmt.Sprintf("%s(%s)", sel.Sel.Name, id.Name)] = true
					}
				}
				return true
			})
			continue
		}
		if f.Doc != nil {
			s.docIn = append(s.docIn, name)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					s.declaredIn[d.Name.Name] = name
				}
				if d.Name.IsExported() {
					s.exported = append(s.exported, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.ValueSpec:
						for _, id := range sp.Names {
							s.declaredIn[id.Name] = name
							if id.IsExported() {
								s.exported = append(s.exported, id.Name)
							}
						}
					case *ast.TypeSpec:
						s.declaredIn[sp.Name.Name] = name
						if sp.Name.IsExported() {
							s.exported = append(s.exported, sp.Name.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(s.docIn)
	slices.Sort(s.exported)
	return s
}

// interfaceMethods are exported methods a module's own types must have to
// satisfy another package's interface (flux_operator's wait client, Helm's
// kube.Interface), not exports.
var interfaceMethods = []string{"Wait", "WaitWithJobs"}

// TestModulesKeepOneShape reads every module's Go source and fails when one
// departs from the shape docs/architecture.md describes: the package doc
// in entry.go; Entry declared there and nothing else exported; the spec,
// var module, in module.go and the body, run, in run.go (a module whose
// logic is shared, k3s_config and k3s_registries, has entry.go alone);
// and a fuzz test of its no_log values and a bad-input test on its spec,
// in its package or in the shared one.
func TestModulesKeepOneShape(t *testing.T) {
	root := golden.RepoRoot(t)
	shared := map[string]moduleShape{}
	for _, m := range Modules {
		t.Run(m.Name, func(t *testing.T) {
			s := readShape(t, filepath.Join(root, "modules", m.Name))
			assert.Equal(t, []string{"entry.go"}, s.docIn, "the package doc comment, in entry.go alone")
			assert.Equal(t, "entry.go", s.declaredIn["Entry"], "var Entry in entry.go")
			exported := slices.DeleteFunc(slices.Clone(s.exported), func(n string) bool { return slices.Contains(interfaceMethods, n) })
			assert.Equal(t, []string{"Entry"}, exported, "nothing exported but Entry")
			spec := "module"
			if m.SharedLogic != "" {
				if _, ok := shared[m.SharedLogic]; !ok {
					shared[m.SharedLogic] = readShape(t, filepath.Join(root, m.SharedLogic))
				}
				s = shared[m.SharedLogic]
				spec = sharedSpec(t, filepath.Join(root, "modules", m.Name))
			} else {
				assert.Equal(t, "module.go", s.declaredIn["module"], "var module, the spec, in module.go")
				assert.Equal(t, "run.go", s.declaredIn["run"], "func run, the body, in run.go")
			}
			assert.True(t, s.calls["FuzzNoLog("+spec+")"], "a fuzz test of %s's no_log values: ansibletest.FuzzNoLog(f, %s, ...)", m.Name, spec)
			assert.True(t, s.calls["CheckBadInputs("+spec+")"], "a bad-input test of %s's spec: ansibletest.CheckBadInputs(t, %s, ...)", m.Name, spec)
		})
	}
}

// sharedSpec is the name of the spec a module with shared logic binds in
// its entry.go: Entry{Module: <package>.<name>, ...}.
func sharedSpec(t *testing.T, dir string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "entry.go"), nil, 0)
	require.NoError(t, err)
	name := ""
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if key, isIdent := kv.Key.(*ast.Ident); isIdent && key.Name == "Module" {
			if sel, ok := kv.Value.(*ast.SelectorExpr); ok {
				name = sel.Sel.Name
			}
		}
		return true
	})
	require.NotEmpty(t, name, "%s/entry.go binds Entry{Module: <package>.<spec>}", dir)
	return name
}
