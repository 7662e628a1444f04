// Package fluxrepocheck is the read-only Ansible module that predicts what
// Flux will make of a repository before it is pushed (internal/repocheck).
package fluxrepocheck

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

// Entry is the module, for the controller-side binary (cmd/controller).
var Entry = ansible.Entry{Module: module, Run: run}
