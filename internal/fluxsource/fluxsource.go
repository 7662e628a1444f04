// Package fluxsource predicts which files of a repository source-controller
// puts into a GitRepository's artifact: its built-in exclusions and the
// repository's .sourceignore files, applied as source-controller applies them
// (fluxcd/pkg's sourceignore patterns, the same choice of lists as
// artifact/storage's SourceIgnoreFilter), and for every excluded file the
// rule that excluded it.
package fluxsource

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
)

// Rule is one ignore pattern and where it comes from.
type Rule struct {
	// Pattern is the line as written (a "!" line re-includes).
	Pattern string
	// File is the .sourceignore it was read from, relative to the
	// repository root; empty for source-controller's built-in lists.
	File string
	// Line is its line number in File.
	Line int
	// Group names a built-in list: "vcs" or "default".
	Group string

	parsed gitignore.Pattern
}

// String names the rule as a user can find it.
func (r Rule) String() string {
	if r.File == "" {
		return fmt.Sprintf("%q (source-controller's built-in %s exclusions)", r.Pattern, r.Group)
	}
	return fmt.Sprintf("%q (%s line %d)", r.Pattern, r.File, r.Line)
}

// Filter decides, as source-controller does, whether a path of the
// repository is left out of the artifact.
type Filter struct {
	root   string
	domain []string
	// rules in increasing priority: the last that matches decides.
	rules []Rule
	// UserRules counts the rules read from .sourceignore files (and
	// spec.ignore); when there are any, the default exclusions are off.
	UserRules int
}

// Load reads every .sourceignore under root (as sourceignore.LoadIgnorePatterns
// does: the root's first, then each directory's in walk order, .git
// skipped) and spec.ignore's lines (ignore, may be empty), highest priority.
func Load(root, ignore string) (*Filter, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	f := &Filter{root: abs, domain: strings.Split(abs, string(filepath.Separator))}
	var user []Rule
	if err := f.loadDir(abs, nil, &user); err != nil {
		return nil, err
	}
	user = append(user, readRules(strings.NewReader(ignore), "spec.ignore", f.domain)...)
	f.UserRules = len(user)
	f.rules = builtin(sourceignore.ExcludeVCS, "vcs", f.domain)
	if len(user) == 0 {
		for _, list := range []string{sourceignore.ExcludeExt, sourceignore.ExcludeCI, sourceignore.ExcludeExtra} {
			f.rules = append(f.rules, builtin(list, "default", f.domain)...)
		}
	}
	f.rules = append(f.rules, user...)
	return f, nil
}

func builtin(list, group string, domain []string) []Rule {
	var rules []Rule
	for _, p := range strings.Split(list, ",") {
		rules = append(rules, Rule{Pattern: p, Group: group, parsed: gitignore.ParsePattern(p, domain)})
	}
	return rules
}

func (f *Filter) loadDir(dir string, rel []string, out *[]Rule) error {
	dom := append(slices.Clone(f.domain), rel...)
	file := filepath.Join(dir, sourceignore.IgnoreFile)
	r, err := os.Open(file)
	switch {
	case err == nil:
		*out = append(*out, readRules(r, filepath.ToSlash(filepath.Join(append(rel, sourceignore.IgnoreFile)...)), dom)...)
		r.Close()
	case !os.IsNotExist(err):
		return fmt.Errorf("read %s: %w", file, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".git" {
			if err := f.loadDir(filepath.Join(dir, e.Name()), append(slices.Clone(rel), e.Name()), out); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRules reads patterns as sourceignore.ReadPatterns does: a line is a
// comment only when it starts with "#"; blank lines are skipped.
func readRules(r io.Reader, name string, domain []string) []Rule {
	var rules []Rule
	scanner := bufio.NewScanner(r)
	for n := 1; scanner.Scan(); n++ {
		s := scanner.Text()
		if strings.HasPrefix(s, "#") || strings.TrimSpace(s) == "" {
			continue
		}
		rules = append(rules, Rule{Pattern: s, File: name, Line: n, parsed: gitignore.ParsePattern(s, domain)})
	}
	return rules
}

// Excluded reports whether rel (slash-separated, relative to the root) is
// left out, and the rule that decided; ok is false when no rule matched.
func (f *Filter) Excluded(rel string, isDir bool) (excluded bool, rule Rule, ok bool) {
	path := append(slices.Clone(f.domain), strings.Split(rel, "/")...)
	for i := len(f.rules) - 1; i >= 0; i-- {
		switch f.rules[i].parsed.Match(path, isDir) {
		case gitignore.Exclude:
			return true, f.rules[i], true
		case gitignore.Include:
			return false, f.rules[i], true
		}
	}
	return false, Rule{}, false
}

// File is a regular file of the repository and what the artifact makes of it.
type File struct {
	Path     string // slash-separated, relative to the root
	Excluded bool
	Rule     Rule // the rule that decided, when one matched
}

// Walk lists the repository's regular files, as the archiver walks them:
// symbolic links and other special files are never archived; a file is
// tested on its own even under an excluded directory.
func (f *Filter) Walk() ([]File, error) {
	var files []File
	err := filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(f.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		excluded, rule, _ := f.Excluded(rel, false)
		files = append(files, File{Path: rel, Excluded: excluded, Rule: rule})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", f.root, err)
	}
	return files, nil
}

// Export copies the files the artifact keeps into dst (which must exist),
// with the archive's modes (0600, 0700 with an exec bit; directories 0750):
// the tree kustomize-controller unpacks.
func Export(root string, files []File, dst string) error {
	for _, file := range files {
		if file.Excluded {
			continue
		}
		src := filepath.Join(root, filepath.FromSlash(file.Path))
		info, err := os.Stat(src)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if info.Mode()&0o111 != 0 {
			mode = 0o700
		}
		target := filepath.Join(dst, filepath.FromSlash(file.Path))
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			return err
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, mode); err != nil {
			return err
		}
	}
	return nil
}
