// Package fluxstatus is the Ansible module that reports the hand-off to
// Flux: sources, Kustomizations and HelmReleases, and what is failing.
package fluxstatus

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// Entry is the module with its real cluster connection, for the
// controller-side binary (cmd/controller).
var Entry = ansible.Entry{Module: module, Run: kube.With(run, kube.Connect)}
