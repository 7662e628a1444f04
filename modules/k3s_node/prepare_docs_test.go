package main

import (
	"testing"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible/ansibletest"
	"github.com/gitops-k3s-flux/k3s_flux/internal/prepare"
)

// TestSidecarDocs for k3s_prepare, which this binary serves too.
func TestSidecarDocsPrepare(t *testing.T) {
	ansibletest.CheckSidecar(t, prepare.Module)
}
