package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gitops-k3s-flux/k3s_flux/internal/golden"
)

func filesReader(files map[string]string) reader {
	return func(name string) ([]byte, bool) {
		data, ok := files[name]
		return []byte(data), ok
	}
}

// devPins is the head of what the root requirements.txt held before it moved
// to hack/requirements-dev.txt.
const devPins = "# Python tools the Makefile installs\nansible-compat==26.10.0\nansible-core==2.19.14\nmolecule==26.10.0\nPyYAML==6.0.4\n"

func TestCheck(t *testing.T) {
	meta := func(deps string) string { return "version: 1\ndependencies:\n" + deps }
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // a substring of each finding, in order
	}{
		{"nothing declared", map[string]string{"galaxy.yml": "name: x\n"}, nil},
		{"the development pins as the root requirements.txt", map[string]string{"requirements.txt": devPins}, []string{
			`requirements.txt: "ansible-compat==26.10.0": a development tool`,
			`requirements.txt: "ansible-core==2.19.14": Ansible itself`,
			`requirements.txt: "molecule==26.10.0": a development tool`,
			`requirements.txt: "PyYAML==6.0.4": a pinned or capped version (==6.0.4)`,
		}},
		{"a root requirements.txt beside the metadata is read too", map[string]string{
			metaFile + ".yml": meta("  system: bindep.txt\n"), "bindep.txt": "xz-libs [platform:rpm]\n", "requirements.txt": "ansible>=9\n",
		}, []string{`requirements.txt: "ansible>=9": Ansible itself`}},
		{"real needs, bounded from below", map[string]string{
			metaFile + ".yml":          meta("  python: meta/ee-requirements.txt\n"),
			"meta/ee-requirements.txt": "# the client\nkubernetes[adal]>=24.2.0 ; python_version >= \"3.9\"\nrequests>=2.28,!=2.30.0  # not that one\njsonpatch\n",
		}, nil},
		{"capped and compatible-release versions", map[string]string{"requirements.txt": "requests<3\nurllib3<=2.0\nPyYAML~=6.0\n"}, []string{
			"(<3)", "(<=2.0)", "(~=6.0)",
		}},
		{"names normalised as pip does", map[string]string{"requirements.txt": "Ansible_Core>=2.16\nansible.lint\n"}, []string{
			"Ansible itself", "a development tool",
		}},
		{"an included file is followed", map[string]string{
			metaFile + ".yaml": meta("  python: meta/ee.txt\n"), "meta/ee.txt": "-r more.txt\n", "meta/more.txt": "ansible-core\n",
		}, []string{`meta/more.txt: "ansible-core": Ansible itself`}},
		{"requirements inline in the metadata", map[string]string{metaFile + ".yml": meta("  python:\n    - molecule\n")}, []string{
			`dependencies.python: "molecule": a development tool`,
		}},
		{"a file the release left out", map[string]string{metaFile + ".yml": meta("  python: requirements.txt\n  system: bindep.txt\n")}, []string{
			"python dependencies are in requirements.txt, which the collection does not hold",
			"system dependencies are in bindep.txt, which the collection does not hold",
		}},
		{"a path outside the collection", map[string]string{metaFile + ".yml": meta("  python: ../requirements.txt\n")}, []string{
			`are in "../requirements.txt": expected a path inside the collection`,
		}},
		{"metadata that is not YAML", map[string]string{metaFile + ".yml": "version: [1\n"}, []string{
			"meta/execution-environment.yml: not the YAML ansible-builder reads",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := check(filesReader(tc.files))
			require.Len(t, found, len(tc.want), "%q", found)
			for i, want := range tc.want {
				assert.Contains(t, found[i], want)
			}
		})
	}
}

// TestTarball: the tarball as ansible-galaxy builds it is read, binaries
// skipped.
func TestTarball(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range map[string]string{"./requirements.txt": devPins, "plugins/bin/linux_amd64/k3s_node": "\x7fELF"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	tarball := filepath.Join(t.TempDir(), "gitops-k3s_flux-0.1.0.tar.gz")
	require.NoError(t, os.WriteFile(tarball, buf.Bytes(), 0o644))

	read, err := open(tarball)
	require.NoError(t, err)
	_, ok := read("plugins/bin/linux_amd64/k3s_node")
	assert.False(t, ok, "a binary is not read")
	assert.Len(t, check(read), 4)
}

// TestThisCollection: what this checkout declares for an execution
// environment is what its plugins need, in files the release keeps, and the
// development pins are where the release leaves them out.
func TestThisCollection(t *testing.T) {
	root := golden.RepoRoot(t)
	read, err := open(root)
	require.NoError(t, err)
	assert.Empty(t, check(read))

	var galaxy struct {
		BuildIgnore []string `json:"build_ignore"`
	}
	raw, err := os.ReadFile(filepath.Join(root, "galaxy.yml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &galaxy))
	ignored := func(name string) bool {
		for p := name; p != "."; p = path.Dir(p) {
			for _, pattern := range galaxy.BuildIgnore {
				if ok, _ := path.Match(pattern, p); ok {
					return true
				}
			}
		}
		return false
	}

	deps, err := declared(read)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "meta", "execution-environment.yml"), "ansible-builder reads it")
	assert.Equal(t, map[string]any{"system": "bindep.txt"}, deps, "no Python package: the plugins import ansible-core and the standard library only")
	assert.False(t, ignored("meta/execution-environment.yml"))
	assert.False(t, ignored("bindep.txt"))
	assert.True(t, ignored("hack/requirements-dev.txt"), "the development pins stay out of the release")
	pins, err := os.ReadFile(filepath.Join(root, "hack", "requirements-dev.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(pins), "\nansible-core==", "make test-e2e-pypi and tests/tools/tiers.sh read ansible-core's version there")
	assert.NotEmpty(t, check(filesReader(map[string]string{"requirements.txt": string(pins)})), "the check refuses them")
}

// pluginImport is a Python import statement's top-level module.
var pluginImport = regexp.MustCompile(`(?m)^\s*(?:import\s+([A-Za-z_]\w*)|from\s+([A-Za-z_]\w*)[\w.]*\s+import\b)`)

// TestPluginsImportNothingToDeclare: the controller-side Python imports
// ansible-core, this collection and Python's standard library only, which is
// why meta/execution-environment.yml declares no Python package. A new import
// of a package from PyPI must be declared there (a requirements file, bounded
// with >= only) before it is added here.
func TestPluginsImportNothingToDeclare(t *testing.T) {
	allowed := map[string]bool{
		"__future__": true, "ansible": true, "ansible_collections": true,
		// Python's standard library
		"dataclasses": true, "fcntl": true, "hashlib": true, "json": true, "lzma": true, "os": true, "re": true,
		"shlex": true, "stat": true, "tempfile": true, "time": true,
	}
	root := golden.RepoRoot(t)
	err := filepath.WalkDir(filepath.Join(root, "plugins"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".py" {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range pluginImport.FindAllStringSubmatch(string(src), -1) {
			module := m[1] + m[2]
			assert.True(t, allowed[module], "%s imports %s: declare it for execution environments (meta/execution-environment.yml), or list it here if it is Python's standard library", p, module)
		}
		return nil
	})
	require.NoError(t, err)
}
