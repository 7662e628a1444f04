package main

import "github.com/gitops-k3s-flux/k3s_flux/internal/kube"

// connection is a Connection for a kubeconfig file.
func connection(kubeconfig string) kube.Connection { return kube.Connection{Kubeconfig: kubeconfig} }
