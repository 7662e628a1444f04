// Command flux_instance is the Ansible module that applies the
// FluxInstance (the hand-off to Flux) and waits for it.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

func main() { ansible.Main(module, kube.With(run, kube.Connect)) }
