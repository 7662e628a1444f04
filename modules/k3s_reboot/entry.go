// Package k3sreboot is the k3s_reboot module, served by the k3s_node
// binary: the node side of a reboot without Python. The module schedules
// the reboot and returns the boot id; the action plugin waits for the host
// to answer with another.
package k3sreboot

import (
	"context"
	"os"
	"os/exec"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return run(ctx, req, thisNode)
}}

// thisNode is the machine the binary runs on.
var thisNode = host{ReadFile: os.ReadFile, LookPath: exec.LookPath, Schedule: scheduleDetached}
