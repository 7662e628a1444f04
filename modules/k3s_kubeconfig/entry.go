// Package k3skubeconfig is the Ansible module that writes a k3s cluster's
// admin kubeconfig on the Ansible controller, pointed at the cluster's API
// endpoint and named after it.
package k3skubeconfig

import "github.com/gitops-k3s-flux/k3s_flux/internal/ansible"

// Entry is the module, for the controller-side binary (cmd/controller).
var Entry = ansible.Entry{Module: module, Run: run}
