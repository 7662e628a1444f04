package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateCgroups(t *testing.T) {
	for _, tc := range []struct {
		name, controllers, cgroups, wantErr string
	}{
		{name: "v2 with all three", controllers: "cpuset cpu io memory pids\n"},
		{name: "v2 without memory", controllers: "cpuset cpu io pids\n", wantErr: "failed to find memory cgroup (v2)"},
		{name: "v2 without cpuset", controllers: "cpu io memory pids\n", wantErr: "failed to find cpuset cgroup (v2)"},
		{name: "v1 with memory", cgroups: "7\t1\t1"},
		{name: "v1, a Pi booted without the cgroup words", cgroups: "0\t1\t0",
			wantErr: `failed to find memory cgroup, you may need to add "cgroup_memory=1 cgroup_enable=memory" to your linux cmdline (/boot/cmdline.txt on a Raspberry Pi)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(path, content string) {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, path), []byte(content), 0o644))
			}
			if tc.controllers != "" {
				write("sys/fs/cgroup/cgroup.controllers", tc.controllers)
			} else {
				write("proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t"+tc.cgroups+"\n")
			}
			err := validateCgroups(root)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.wantErr)
		})
	}
}
