// Package k3sregistries is module k3s_registries: it renders k3s's
// registries.yaml and the TLS files it names on a node. Its logic is
// internal/k3sconfig's, which module k3s_node runs in-process too. Binary
// cmd/k3s_config serves it.
package k3sregistries

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
)

// Entry is the module.
var Entry = ansible.Entry{Module: k3sconfig.RegistriesModule, Run: k3sconfig.RunRegistries}
