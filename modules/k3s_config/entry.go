// Package k3sconfigmodule is module k3s_config: it renders k3s's
// config.yaml and its drop-ins on a node. Its logic is internal/k3sconfig's,
// which module k3s_node runs in-process too. Binary cmd/k3s_config serves
// it, with k3s_registries.
package k3sconfigmodule

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
)

// Entry is the module.
var Entry = ansible.Entry{Module: k3sconfig.Module, Run: k3sconfig.Run}
