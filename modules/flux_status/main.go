// Command flux_status is the Ansible module that reports the hand-off to
// Flux: sources, Kustomizations and HelmReleases, and what is failing.
package main

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

func main() { ansible.Main(module, kube.With(run, kube.Connect)) }
