// Package k3snodeinfo is module k3s_node_info: it reads k3s on a node (its
// version, its units, and on a server the node token and admin kubeconfig)
// and checks the host before an install. Binary cmd/k3s_node serves it.
package k3snodeinfo

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// Entry is the module, bound to this host.
var Entry = ansible.Entry{Module: module, Run: k3snode.With(run)}
