package registry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

// TestGoldenGeneratedFiles: the files rendered from the table are the ones
// in the tree (-update, i.e. make docs, writes them).
func TestGoldenGeneratedFiles(t *testing.T) {
	root := golden.RepoRoot(t)
	files := map[string]string{
		"modules.mk":                       Makefile(),
		"plugins/plugin_utils/registry.py": Python(),
		"meta/runtime.yml":                 RuntimeYAML(),
	}
	for path, want := range files {
		file := filepath.Join(root, path)
		if *golden.Update {
			// Not through a link an older build left there (to a binary).
			require.NoError(t, os.RemoveAll(file))
			require.NoError(t, os.WriteFile(file, []byte(want), 0o644))
		}
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "%s disagrees with internal/registry: run make docs", path)
	}
}

// TestTheMakefileUsesTheLists: the Makefile takes its lists from modules.mk
// and defines none of them itself.
func TestTheMakefileUsesTheLists(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(golden.RepoRoot(t), "Makefile"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^include modules\.mk$`, string(raw))
	for _, list := range []string{"NODE_MODULES", "NODE_PLATFORMS", "CONTROLLER_PLATFORMS", "MODULES"} {
		assert.False(t, regexp.MustCompile(`(?m)^`+list+`\s*[:?+]?=`).Match(raw), "the Makefile defines %s: modules.mk does", list)
	}
}

// TestBinariesServeTheirModules: each cmd/<binary> is a binary of the
// table, and the names its entries map answers to are the table's.
func TestBinariesServeTheirModules(t *testing.T) {
	root := golden.RepoRoot(t)
	dirs, err := os.ReadDir(filepath.Join(root, "cmd"))
	require.NoError(t, err)
	var cmds []string
	for _, d := range dirs {
		if d.IsDir() {
			cmds = append(cmds, d.Name())
		}
	}
	var binaries []string
	for _, b := range Binaries {
		binaries = append(binaries, b.Name)
	}
	slices.Sort(binaries)
	assert.Equal(t, binaries, cmds, "cmd/ holds the table's binaries")
	for _, b := range Binaries {
		assert.Equal(t, ServedBy(b.Name), entryNames(t, filepath.Join(root, "cmd", b.Name, "main.go")), "cmd/%s/main.go's entries", b.Name)
	}
}

// entryNames are the keys of the map literal assigned to var entries in
// the Go file at path, sorted.
func entryNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	var names []string
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "entries" || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.CompositeLit)
		require.True(t, ok, "%s: entries is a map literal", path)
		found = true
		for _, elt := range lit.Elts {
			key, ok := elt.(*ast.KeyValueExpr).Key.(*ast.BasicLit)
			require.True(t, ok, "%s: the entries' keys are string literals", path)
			name, err := strconv.Unquote(key.Value)
			require.NoError(t, err)
			names = append(names, name)
		}
		return false
	})
	require.True(t, found, "%s has var entries", path)
	slices.Sort(names)
	return names
}

// TestEveryModuleHasItsParts: each module of the table has its package
// under modules/ (a library: binaries live under cmd/), its action plugin
// and its Python file (docs and argument spec), and nothing there names a module the table lacks.
func TestEveryModuleHasItsParts(t *testing.T) {
	root := golden.RepoRoot(t)
	var names []string
	for _, m := range Modules {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	list := func(dir, suffix string) []string {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			if suffix == "" && e.IsDir() || suffix != "" && strings.HasSuffix(e.Name(), suffix) {
				out = append(out, strings.TrimSuffix(e.Name(), suffix))
			}
		}
		return out
	}
	assert.Equal(t, names, list("modules", ""), "modules/<name>")
	assert.Equal(t, names, list("plugins/action", ".py"), "plugins/action/<name>.py")
	assert.Equal(t, names, list("plugins/modules", ".py"), "plugins/modules/<name>.py")
	for _, m := range Modules {
		want := []string{"entry.go", "module.go", "run.go"}
		if m.SharedLogic != "" {
			want = []string{"entry.go"}
			assert.DirExists(t, filepath.Join(root, m.SharedLogic), m.Name)
		}
		for _, file := range want {
			assert.FileExists(t, filepath.Join(root, "modules", m.Name, file), "module %s: its spec in module.go, its plan and apply in run.go, its real clients bound in entry.go", m.Name)
		}
	}
	pkg := regexp.MustCompile(`(?m)^package (\w+)$`)
	for _, name := range names {
		files, err := filepath.Glob(filepath.Join(root, "modules", name, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			m := pkg.FindSubmatch(raw)
			require.NotNil(t, m, f)
			assert.NotEqual(t, "main", string(m[1]), "%s: a module is a library; its binary is under cmd/", f)
		}
	}
}
