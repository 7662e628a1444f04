module github.com/gitops-k3s-flux/k3s_flux/tests/tools/k8s

go 1.26.8
