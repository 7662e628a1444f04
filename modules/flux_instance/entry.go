// Package fluxinstance is the Ansible module that applies the
// FluxInstance (the hand-off to Flux) and waits for it.
package fluxinstance

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// Entry is the module with its real cluster connection, for the
// controller-side binary (cmd/controller).
var Entry = ansible.Entry{Module: module, Run: kube.With(run, kube.Connect)}
