// Package k3smanifest is the k3s_manifest module, served by the k3s_node
// binary: a manifest in a k3s server's auto-deploy directory, which k3s
// applies at start and whenever the file changes.
package k3smanifest

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: module, Run: run}
