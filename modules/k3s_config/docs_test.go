package main

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
)

func TestSidecarDocs(t *testing.T) {
	ansibletest.CheckSidecar(t, k3sconfig.Module)
	ansibletest.CheckSidecar(t, k3sconfig.RegistriesModule)
}
