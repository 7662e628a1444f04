// Command eedeps fails when a collection declares, for an execution
// environment, what certification refuses. ansible-builder installs the Python
// requirements a collection names (meta/execution-environment.yml's
// dependencies.python, else a root requirements.txt) into every execution
// environment built with it, so Ansible itself, a development tool, or a
// pinned or capped version there reaches every user's image; Red Hat's
// partner certification refuses them
// (https://docs.ansible.com/projects/partner-certification-requirements/dependencies/).
// A file the metadata names that the collection does not hold fails too:
// ansible-builder stops on it. make release runs it on the tarball
// (hack/release.sh).
//
//	go run ./tests/eedeps <collection tarball or directory>
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: eedeps <collection tarball or directory>")
		os.Exit(2)
	}
	read, err := open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "eedeps:", err)
		os.Exit(1)
	}
	found := check(read)
	for _, f := range found {
		fmt.Fprintf(os.Stderr, "eedeps: %s: %s\n", os.Args[1], f)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// reader returns the file at a slash-separated path relative to the
// collection root, and whether the collection holds it.
type reader func(name string) ([]byte, bool)

// open reads the collection at p: a directory, or a tarball as ansible-galaxy
// builds it (only its text files are kept: the binaries are not read).
func open(p string) (reader, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return func(name string) ([]byte, bool) {
			data, err := os.ReadFile(filepath.Join(p, filepath.FromSlash(name)))
			return data, err == nil
		}, nil
	}
	files, err := textFilesOf(p)
	if err != nil {
		return nil, fmt.Errorf("reading the collection tarball %s: %w", p, err)
	}
	return func(name string) ([]byte, bool) {
		data, ok := files[name]
		return data, ok
	}, nil
}

func textFilesOf(tarball string) (map[string][]byte, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		ext := path.Ext(h.Name)
		if h.Typeflag != tar.TypeReg || h.Size > 1<<20 || (ext != ".txt" && ext != ".yml" && ext != ".yaml") {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[path.Clean(strings.TrimPrefix(h.Name, "./"))] = data
	}
}

// check returns what the collection declares that an execution environment
// must not get, each naming the file, the line and why.
func check(read reader) []string {
	deps, err := declared(read)
	if err != nil {
		return []string{err.Error()}
	}
	var found []string
	python := []any{}
	if d, ok := deps["python"]; ok {
		python = append(python, d)
	}
	// Certification reads a root requirements.txt even beside the metadata.
	if d, _ := deps["python"].(string); d != "requirements.txt" {
		if _, ok := read("requirements.txt"); ok {
			python = append(python, "requirements.txt")
		}
	}
	for _, d := range python {
		lines, err := dependencyLines(read, d, "python")
		if err != nil {
			found = append(found, err.Error())
		}
		for _, l := range lines {
			if why := refused(l.text); why != "" {
				found = append(found, fmt.Sprintf("%s: %q: %s", l.source, l.text, why))
			}
		}
	}
	if d, ok := deps["system"]; ok {
		if _, err := dependencyLines(read, d, "system"); err != nil {
			found = append(found, err.Error())
		}
	}
	return found
}

const metaFile = "meta/execution-environment"

// declared returns the dependencies ansible-builder takes from the
// collection: those meta/execution-environment.yml names, else a root
// requirements.txt and bindep.txt that hold more than blanks.
func declared(read reader) (map[string]any, error) {
	for _, ext := range []string{".yml", ".yaml"} {
		data, ok := read(metaFile + ext)
		if !ok {
			continue
		}
		var meta struct {
			Dependencies map[string]any `json:"dependencies"`
		}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			return nil, fmt.Errorf("%s%s: not the YAML ansible-builder reads: %w", metaFile, ext, err)
		}
		return meta.Dependencies, nil
	}
	deps := map[string]any{}
	for kind, name := range map[string]string{"python": "requirements.txt", "system": "bindep.txt"} {
		if data, ok := read(name); ok && strings.TrimSpace(string(data)) != "" {
			deps[kind] = name
		}
	}
	return deps, nil
}

type requirement struct{ source, text string }

// dependencyLines returns the lines of dependency d of kind: a file of the
// collection (a pip file's -r includes followed), or the lines themselves.
func dependencyLines(read reader, d any, kind string) ([]requirement, error) {
	switch d := d.(type) {
	case []any:
		var lines []requirement
		for _, l := range d {
			lines = append(lines, requirement{metaFile + ".yml dependencies." + kind, fmt.Sprint(l)})
		}
		return lines, nil
	case string:
		return fileLines(read, d, kind, 0)
	default:
		return nil, fmt.Errorf("%s.yml: dependencies.%s is %T: expected a file name or a list of requirements", metaFile, kind, d)
	}
}

func fileLines(read reader, name, kind string, depth int) ([]requirement, error) {
	if path.IsAbs(name) || path.Clean(name) == ".." || strings.HasPrefix(path.Clean(name), "../") {
		return nil, fmt.Errorf("the %s dependencies are in %q: expected a path inside the collection", kind, name)
	}
	data, ok := read(path.Clean(name))
	if !ok {
		return nil, fmt.Errorf("the %s dependencies are in %s, which the collection does not hold (ansible-builder fails on it; is it in galaxy.yml's build_ignore?)", kind, name)
	}
	var lines []requirement
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		include, isInclude := strings.CutPrefix(l, "-r ")
		if !isInclude {
			include, isInclude = strings.CutPrefix(l, "--requirement ")
		}
		if kind == "python" && isInclude && depth < 8 {
			more, err := fileLines(read, path.Join(path.Dir(name), strings.TrimSpace(include)), kind, depth+1)
			if err != nil {
				return lines, err
			}
			lines = append(lines, more...)
			continue
		}
		lines = append(lines, requirement{name, l})
	}
	return lines, nil
}

// ansibleItself and devTools are the packages a collection must not make an
// execution environment install: the image brings ansible-core, and the tools
// are this checkout's (hack/requirements-dev.txt). The names are
// ansible-builder's EXCLUDE_REQUIREMENTS, and the development tools that file
// pins.
var (
	ansibleItself = map[string]bool{"ansible": true, "ansible-core": true, "ansible-base": true}
	devTools      = map[string]bool{
		"ansible-lint": true, "ansible-compat": true, "molecule": true, "yamllint": true, "black": true,
		"pylint": true, "flake8": true, "pycodestyle": true, "tox": true, "pytest": true, "pytest-xdist": true,
		"coverage": true, "mock": true, "testinfra": true, "galaxy-importer": true, "voluptuous": true,
	}
	requirementLine = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;#]*)`)
	separators      = regexp.MustCompile(`[-_.]+`)
)

// refused says why certification refuses the pip requirement line, or "".
// Only >= and != may bound a version: == pins it, and <, <= and ~= cap it,
// which breaks an image holding a collection that needs a later one.
func refused(line string) string {
	m := requirementLine.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	name := separators.ReplaceAllString(strings.ToLower(m[1]), "-")
	switch {
	case ansibleItself[name]:
		return "Ansible itself, which the execution environment brings: a collection must not name it"
	case devTools[name]:
		return "a development tool, not a need of the collection's plugins: it belongs in hack/requirements-dev.txt"
	}
	for _, clause := range strings.Split(m[3], ",") {
		clause = strings.TrimSpace(clause)
		for _, op := range []string{"==", "<", "~="} {
			if strings.HasPrefix(clause, op) {
				return "a pinned or capped version (" + clause + "): only >= and != are allowed"
			}
		}
	}
	return ""
}
