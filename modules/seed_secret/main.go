// Command seed_secret is the Ansible module that creates the namespaces
// and seed Secrets Flux needs before it can run.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

func main() { ansible.Main(module, kube.With(run, kube.Connect)) }
