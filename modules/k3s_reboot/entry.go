package k3sreboot

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: Module, Run: ThisNode.Run}
