//go:build tools

// Package k8s pins the Kubernetes control-plane commands the test bed runs:
// kube-apiserver, kube-controller-manager and kube-scheduler, built from the
// Go module proxy by tests/tools/build.sh. Test tools only: nothing here is
// linked into the collection.
package k8s

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
