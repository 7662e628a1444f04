// Command flux_operator is the Ansible module that installs the Flux
// Operator Helm chart with the Helm SDK.
package main

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

func main() { ansible.Main(module, run) }
