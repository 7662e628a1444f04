// Package nodedrain is the Ansible module that cordons, drains and
// uncordons a Node, as kubectl does, for rolling upgrades and node removal.
package nodedrain

import (
	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/kube"
)

// Entry is the module with its real cluster connection, for the
// controller-side binary (cmd/controller).
var Entry = ansible.Entry{Module: module, Run: kube.With(run, kube.Connect)}
