package registry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

// maxFunctionLines is the longest a function of modules/ or internal/ may
// be: a longer one holds several decisions that want names of their own.
const maxFunctionLines = 80

// TestFunctionsStayShort: no function (tests aside) in modules/ or
// internal/ is over maxFunctionLines lines.
func TestFunctionsStayShort(t *testing.T) {
	root := golden.RepoRoot(t)
	fset := token.NewFileSet()
	for _, dir := range []string{"modules", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok {
					continue
				}
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				rel, _ := filepath.Rel(root, path)
				assert.LessOrEqual(t, lines, maxFunctionLines, "%s: func %s is %d lines", rel, fn.Name.Name, lines)
			}
			return nil
		})
		require.NoError(t, err)
	}
}
