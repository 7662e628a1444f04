// Command k3s_node_info is the Ansible module that reads k3s on a node, a
// binary of its own: it runs before anything is installed, on every host, so
// it stays small.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	k3snodeinfo "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_node_info"
)

// entries are the modules this binary serves (internal/registry lists them).
var entries = map[string]ansible.Entry{
	"k3s_node_info": k3snodeinfo.Entry,
}

func main() {
	ansible.MainMulti(entries)
}
