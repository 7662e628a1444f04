// Command k3s_config is the Ansible module that renders k3s's config.yaml.
package main

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

func main() { ansible.Main(module, run) }
