package fluxsource

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree is the repository every case starts from.
var tree = []string{
	"README.md", "bundle.tgz", "logo.png", "pics/a.JPG", "pics/b.jpg", "nested/logo.png",
	"deploy/app.yaml", "deploy/keep.yaml", ".github/workflows/ci.yml", "nested/.github/x.yml",
	".gitignore", ".gitattributes", ".gitmodules", ".git/config", "apps/.sops.yaml", "top.yml",
	"sub/a.yml", "sub/b.yaml", "config/branding/icon.png", "archive.tar.gz",
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// referenceKept is what source-controller's own code keeps: LoadIgnorePatterns
// and the choice of lists of artifact/storage's SourceIgnoreFilter.
func referenceKept(t *testing.T, root, ignore string) []string {
	t.Helper()
	domain := strings.Split(root, string(filepath.Separator))
	ps, err := sourceignore.LoadIgnorePatterns(root, domain)
	require.NoError(t, err)
	ps = append(ps, sourceignore.ReadPatterns(strings.NewReader(ignore), domain)...)
	matcher := sourceignore.NewDefaultMatcher(ps, domain)
	if len(ps) > 0 {
		matcher = sourceignore.NewMatcher(append(sourceignore.VCSPatterns(domain), ps...))
	}
	var kept []string
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		if fi.Mode().IsRegular() && !matcher.Match(strings.Split(p, string(filepath.Separator)), false) {
			rel, _ := filepath.Rel(root, p)
			kept = append(kept, filepath.ToSlash(rel))
		}
		return nil
	}))
	sort.Strings(kept)
	return kept
}

func keptOf(files []File) []string {
	var kept []string
	for _, f := range files {
		if !f.Excluded {
			kept = append(kept, f.Path)
		}
	}
	sort.Strings(kept)
	return kept
}

// The cases of ../shared/reference/flux-source-defaults.md, section 4,
// each checked against fluxcd/pkg's own matcher and against the facts.
func TestFilterMatchesSourceController(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ignore map[string]string // .sourceignore files
		spec   string            // spec.ignore
		kept   []string          // must be kept
		gone   []string          // must be excluded
	}{
		{name: "no user patterns: the defaults, at any depth, case-sensitive",
			kept: []string{"README.md", "bundle.tgz", "pics/a.JPG", "deploy/app.yaml"},
			gone: []string{"logo.png", "nested/logo.png", "pics/b.jpg", ".github/workflows/ci.yml", "nested/.github/x.yml", "apps/.sops.yaml", ".gitignore", ".git/config", "archive.tar.gz"}},
		{name: "one user pattern turns the defaults off", ignore: map[string]string{".sourceignore": "*.md\n"},
			kept: []string{"logo.png", ".github/workflows/ci.yml", "apps/.sops.yaml", "archive.tar.gz"},
			gone: []string{"README.md", ".gitignore", ".gitattributes"}},
		{name: "only deploy", ignore: map[string]string{".sourceignore": "/*\n!/deploy\n"},
			kept: []string{"deploy/app.yaml", "deploy/keep.yaml"}, gone: []string{"README.md", ".sourceignore", "top.yml"}},
		{name: "an excluded directory does not prune", ignore: map[string]string{".sourceignore": "deploy/\n!deploy/keep.yaml\n"},
			kept: []string{"deploy/keep.yaml"}, gone: []string{"deploy/app.yaml"}},
		{name: "! overrides the VCS group", ignore: map[string]string{".sourceignore": "!.gitignore\n!.git/\n"},
			kept: []string{".gitignore", ".git/config"}, gone: []string{".gitattributes", ".gitmodules"}},
		{name: "a nested .sourceignore applies below it", ignore: map[string]string{"sub/.sourceignore": "*.yml\n"},
			kept: []string{"top.yml", "sub/b.yaml", "logo.png"}, gone: []string{"sub/a.yml"}},
		{name: "comments only: the defaults stay", ignore: map[string]string{".sourceignore": "# nothing\n\n"},
			gone: []string{"logo.png", "pics/b.jpg"}},
		{name: "spec.ignore alone", spec: "!*.png\n", kept: []string{"logo.png", "nested/logo.png", "pics/b.jpg"}, gone: []string{".gitignore"}},
		{name: "a re-include without a slash, at every depth", ignore: map[string]string{".sourceignore": "*.png\n!logo.png\n"},
			kept: []string{"logo.png", "nested/logo.png"}, gone: []string{"config/branding/icon.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{}
			for _, f := range tree {
				files[f] = "x"
			}
			for name, content := range tc.ignore {
				files[name] = content
			}
			write(t, root, files)
			f, err := Load(root, tc.spec)
			require.NoError(t, err)
			got, err := f.Walk()
			require.NoError(t, err)
			kept := keptOf(got)
			assert.Equal(t, referenceKept(t, root, tc.spec), kept, "the same files as fluxcd/pkg's matcher")
			for _, k := range tc.kept {
				assert.Contains(t, kept, k)
			}
			for _, g := range tc.gone {
				assert.NotContains(t, kept, g)
			}
		})
	}
}

func TestExcludedNamesTheRule(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a/icon.png": "x", "b/.sourceignore": "# keep\n*.yaml\n!keep.yaml\n", "b/x.yaml": "", "b/keep.yaml": ""})
	f, err := Load(root, "")
	require.NoError(t, err)
	assert.Equal(t, 2, f.UserRules)

	excluded, rule, ok := f.Excluded("b/x.yaml", false)
	assert.True(t, excluded && ok)
	assert.Equal(t, Rule{Pattern: "*.yaml", File: "b/.sourceignore", Line: 2}, strip(rule))
	assert.Equal(t, `"*.yaml" (b/.sourceignore line 2)`, rule.String())

	excluded, rule, _ = f.Excluded("b/keep.yaml", false)
	assert.False(t, excluded)
	assert.Equal(t, "!keep.yaml", rule.Pattern)

	excluded, rule, ok = f.Excluded("a/icon.png", false)
	assert.False(t, excluded, "user rules turn the defaults off")
	assert.False(t, ok)

	excluded, rule, _ = f.Excluded(".gitignore", false)
	assert.True(t, excluded)
	assert.Equal(t, `".gitignore" (source-controller's built-in vcs exclusions)`, rule.String())

	defaults, err := Load(t.TempDir(), "")
	require.NoError(t, err)
	excluded, rule, _ = defaults.Excluded("a/icon.png", false)
	assert.True(t, excluded)
	assert.Equal(t, Rule{Pattern: "*.png", Group: "default"}, strip(rule))
}

func strip(r Rule) Rule {
	r.parsed = nil
	return r
}

func TestWalkSkipsLinksAndExportKeepsTheRest(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a.yaml": "a", "run.sh": "#!/bin/sh", "logo.png": "png"})
	require.NoError(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("a.yaml", filepath.Join(root, "link.yaml")))
	f, err := Load(root, "")
	require.NoError(t, err)
	files, err := f.Walk()
	require.NoError(t, err)
	assert.Equal(t, []string{"a.yaml", "run.sh"}, keptOf(files), "links are never archived")

	dst := t.TempDir()
	require.NoError(t, Export(root, files, dst))
	info, err := os.Stat(filepath.Join(dst, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	info, err = os.Stat(filepath.Join(dst, "a.yaml"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	_, err = os.Stat(filepath.Join(dst, "logo.png"))
	assert.True(t, os.IsNotExist(err))
}
