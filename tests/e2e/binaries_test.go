//go:build e2e

package e2e

import (
	"debug/elf"
	"debug/macho"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/registry"
)

// TestBinariesPerPlatform checks that every binary make build ships is an
// executable of the OS and CPU its directory names (darwin ones as Mach-O;
// no Mac runs here), for each platform internal/registry names, and that
// each module is a Python file of docs and argument spec naming its binary.
func TestBinariesPerPlatform(t *testing.T) {
	c := installCollection(t)
	plugins := filepath.Join(c.root, "plugins")
	elfMachine := map[string]elf.Machine{"linux_amd64": elf.EM_X86_64, "linux_arm64": elf.EM_AARCH64, "linux_arm": elf.EM_ARM}
	machoCPU := map[string]macho.Cpu{"darwin_amd64": macho.CpuAmd64, "darwin_arm64": macho.CpuArm64}
	want := map[string][]string{}
	for _, b := range registry.Binaries {
		for _, p := range b.Platforms {
			want[p] = append(want[p], b.Name)
		}
	}
	for platform, names := range want {
		for _, name := range names {
			path := filepath.Join(plugins, "bin", platform, name)
			info, err := os.Stat(path)
			require.NoError(t, err)
			t.Logf("%-12s %-14s %6.2f MB", platform, name, float64(info.Size())/(1<<20))
			if cpu, ok := machoCPU[platform]; ok {
				f, err := macho.Open(path)
				require.NoError(t, err, path)
				assert.Equal(t, cpu, f.Cpu, path)
				assert.Equal(t, macho.TypeExec, f.Type, path)
				f.Close()
				continue
			}
			f, err := elf.Open(path)
			require.NoError(t, err, path)
			assert.Equal(t, elfMachine[platform], f.Machine, path)
			assert.Equal(t, elf.ET_EXEC, f.Type, path)
			f.Close()
		}
	}
	// Each module a Python file of docs and argument spec, for ansible-doc, ansible-test and its
	// action plugin: not a binary, nor a link, and nothing else in plugins/modules.
	entries, err := os.ReadDir(filepath.Join(plugins, "modules"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if e.Name() != "__pycache__" { // Python's, should anything have imported a module file
			names = append(names, e.Name())
		}
	}
	assert.Len(t, names, len(registry.Modules), "plugins/modules holds one file per module: %v", names)
	for _, m := range registry.Modules {
		path := filepath.Join(plugins, "modules", m.Name+".py")
		info, err := os.Lstat(path)
		require.NoError(t, err, m.Name)
		assert.True(t, info.Mode().IsRegular(), "%s: a file, not a link", m.Name)
		assert.Less(t, info.Size(), int64(64<<10), m.Name)
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Contains(t, string(raw), "plugins/bin/<os>_<arch>/"+m.Binary, m.Name)
		assert.Contains(t, string(raw), "\nDOCUMENTATION = r\"\"\"\n", m.Name)
	}
}
