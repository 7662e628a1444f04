// Command k3s_config is the Ansible modules that render k3s's files on a
// node, one binary so that a node receives one: k3s_config (config.yaml)
// and k3s_registries (registries.yaml).
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	k3sconfigmodule "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_config"
	k3sregistries "github.com/gitops-k3s-flux/k3s_flux/modules/k3s_registries"
)

// entries are the modules this binary serves (internal/registry lists them).
var entries = map[string]ansible.Entry{
	"k3s_config":     k3sconfigmodule.Entry,
	"k3s_registries": k3sregistries.Entry,
}

func main() {
	ansible.MainMulti(entries)
}
