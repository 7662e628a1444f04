package k3sreboot

import (
	"os"
	"os/exec"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: Module, Run: ThisNode.Run}

// ThisNode is the machine the binary runs on.
var ThisNode = Node{ReadFile: os.ReadFile, LookPath: exec.LookPath, Schedule: scheduleDetached}
