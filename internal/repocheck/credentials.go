package repocheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// The repository Flux pulls is read by everyone who can read it, and often
// by the world: a credential committed to it is published. The scan reads
// every file a push would take (tracked, or untracked and not ignored: what
// `git add -A` adds) and reports each credential by file, line and kind,
// never by value.

// PushedFile is a file of the repository that a push would take.
type PushedFile struct {
	Path    string // slash-separated, relative to the root
	Tracked bool   // false: untracked, not ignored (or no git work tree)
}

// pushable lists what a push would take: `git ls-files` of the tracked
// files and of the untracked ones .gitignore leaves in. Outside a git work
// tree, or without git, every file under root but .git counts: nothing
// ignores anything there.
func pushable(root string) ([]PushedFile, bool, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		files, err := walkAll(root)
		return files, false, err
	}
	var files []PushedFile
	for _, entry := range strings.Split(string(out), "\x00") {
		// "H path" (tracked), "? path" (untracked); S, M, R, C, K are tracked too.
		if len(entry) < 3 {
			continue
		}
		files = append(files, PushedFile{Path: entry[2:], Tracked: entry[0] != '?'})
	}
	return files, true, nil
}

func walkAll(root string) ([]PushedFile, error) {
	var files []PushedFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, PushedFile{Path: filepath.ToSlash(rel)})
		}
		return nil
	})
	return files, err
}

// maxScanned is the largest file read: a credential file is small, and a
// large file is an asset.
const maxScanned = 4 << 20

// scanCredentials reports each pushable file of root that holds a
// credential: by its own content, or as a file a kustomize secretGenerator
// of another file makes a Secret of.
func scanCredentials(root string) ([]Problem, error) {
	files, inGit, err := pushable(root)
	if err != nil {
		return nil, fmt.Errorf("list the repository's files: %w", err)
	}
	pushed := map[string]bool{}
	found := map[string][]credential{}
	var generated []generatorFile
	for _, f := range files {
		pushed[f.Path] = true
		content, err := readSmallRegular(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		credentials, refs := readCredentials(content)
		found[f.Path] = credentials
		for _, r := range refs {
			r.path = path.Join(path.Dir(f.Path), r.path)
			r.from = f.Path
			generated = append(generated, r)
		}
	}
	for _, g := range generated {
		if !pushed[g.path] {
			continue
		}
		content, err := readSmallRegular(filepath.Join(root, filepath.FromSlash(g.path)))
		if err != nil {
			return nil, err
		}
		if c, ok := generatedValues(content, g); ok {
			found[g.path] = append(found[g.path], c)
		}
	}
	var problems []Problem
	for _, f := range files {
		if c := found[f.Path]; len(c) > 0 {
			sort.SliceStable(c, func(i, j int) bool { return c[i].line < c[j].line })
			problems = append(problems, credentialProblem(f, inGit, c))
		}
	}
	return problems, nil
}

// readSmallRegular reads a regular text file; nil for anything else (a
// symbolic link, a submodule, a file gone since git listed it, a binary or
// large file).
func readSmallRegular(path string) ([]byte, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() > maxScanned {
		return nil, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	content, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0 {
		return nil, nil // binary, as git tells one
	}
	return content, nil
}

func credentialProblem(f PushedFile, inGit bool, found []credential) Problem {
	what := make([]string, 0, len(found))
	for _, c := range found {
		what = append(what, fmt.Sprintf("%s (line %d)", c.what, c.line))
	}
	p := Problem{Kind: "credential", Path: f.Path}
	switch {
	case f.Tracked:
		p.Message = fmt.Sprintf("%s is tracked by git and holds %s: a push publishes it to everyone who can read the repository", f.Path, strings.Join(what, ", "))
		p.Fix = fmt.Sprintf("take it out of git (`git rm --cached %s`, then list it in .gitignore) or encrypt it with SOPS; a credential that was ever pushed must be rotated", f.Path)
	case inGit:
		p.Message = fmt.Sprintf("%s is not ignored by git and holds %s: `git add -A` would add it, and a push publish it", f.Path, strings.Join(what, ", "))
		p.Fix = "list it in .gitignore, move it out of the repository, or encrypt it with SOPS"
	default:
		p.Message = fmt.Sprintf("%s holds %s, and the repository directory is not a git work tree that could ignore it: pushed, it would be published", f.Path, strings.Join(what, ", "))
		p.Fix = "move it out of the repository, or encrypt it with SOPS"
	}
	return p
}
