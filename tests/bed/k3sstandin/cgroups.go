package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// validateCgroups is k3s's cgroups.Validate (pkg/cgroups/cgroups_linux.go),
// which the agent's Run (pkg/agent/run.go) calls first, a server's own
// agent too: k3s exits unless, on cgroup v2, the root's controllers include
// cpu, cpuset and memory, or, on v1, the memory controller is there. k3s
// reads v1's from /proc/self/cgroup; the stand-in reads the enabled column
// of /proc/cgroups, which says the same of a kernel and which a test host
// can be given (a file bound over it, as on a Pi booted without
// cgroup_memory=1 cgroup_enable=memory).
func validateCgroups(root string) error {
	if raw, err := os.ReadFile(root + "/sys/fs/cgroup/cgroup.controllers"); err == nil {
		have := strings.Fields(string(raw))
		for _, c := range []string{"cpu", "cpuset", "memory"} {
			if !slices.Contains(have, c) {
				return fmt.Errorf("failed to find %s cgroup (v2)", c)
			}
		}
		return nil
	}
	raw, err := os.ReadFile(root + "/proc/cgroups")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "memory" && f[3] == "1" {
			return nil
		}
	}
	return errors.New(`failed to find memory cgroup, you may need to add "cgroup_memory=1 cgroup_enable=memory" to your linux cmdline (/boot/cmdline.txt on a Raspberry Pi)`)
}
