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
)

// TestBinariesPerPlatform checks that every binary make build ships is an
// executable of the OS and CPU its directory names (darwin ones as Mach-O;
// no Mac runs here), and that each controller-side module is a link to the
// one controller binary.
func TestBinariesPerPlatform(t *testing.T) {
	c := installCollection(t)
	plugins := filepath.Join(c.root, "plugins")
	elfMachine := map[string]elf.Machine{"linux_amd64": elf.EM_X86_64, "linux_arm64": elf.EM_AARCH64, "linux_arm": elf.EM_ARM}
	machoCPU := map[string]macho.Cpu{"darwin_amd64": macho.CpuAmd64, "darwin_arm64": macho.CpuArm64}
	want := map[string][]string{
		"linux_amd64":  {"controller"},
		"linux_arm64":  {"controller", "k3s_config", "k3s_node", "k3s_node_info"},
		"linux_arm":    {"k3s_config", "k3s_node", "k3s_node_info"},
		"darwin_amd64": {"controller"},
		"darwin_arm64": {"controller"},
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
	for _, name := range []string{"k3s_config", "k3s_node", "k3s_node_info"} {
		f, err := elf.Open(filepath.Join(plugins, "modules", name))
		require.NoError(t, err)
		assert.Equal(t, elf.EM_X86_64, f.Machine, name)
		f.Close()
	}
	for _, name := range []string{"cluster_nodes_info", "flux_instance", "flux_operator", "flux_status_info", "seed_secret"} {
		target, err := os.Readlink(filepath.Join(plugins, "modules", name))
		require.NoError(t, err, name)
		assert.Equal(t, "../bin/linux_amd64/controller", target, name)
	}
	target, err := os.Readlink(filepath.Join(plugins, "modules", "k3s_registries"))
	require.NoError(t, err)
	assert.Equal(t, "k3s_config", target, "k3s_registries is served by the k3s_config binary")
}
