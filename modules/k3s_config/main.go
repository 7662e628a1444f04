// Command k3s_config is the Ansible modules that render k3s's files on a
// node: k3s_config (config.yaml) and k3s_registries (registries.yaml), one
// binary, so that a node receives one.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
)

func main() {
	ansible.MainMulti(map[string]ansible.Entry{
		"k3s_config":     {Module: k3sconfig.Module, Run: k3sconfig.Run},
		"k3s_registries": {Module: k3sconfig.RegistriesModule, Run: k3sconfig.RunRegistries},
	})
}
