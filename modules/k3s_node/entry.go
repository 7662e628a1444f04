// Package k3snodemodule is module k3s_node: it installs k3s on a node and
// keeps its service enabled, active and answering, running k3s_config and
// k3s_registries in the same command when given their arguments. Binary
// cmd/k3s_node serves it, with the other modules that change a node.
package k3snodemodule

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// Entry is the module, bound to this host.
var Entry = ansible.Entry{Module: module, Run: k3snode.With(run)}
