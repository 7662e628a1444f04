module github.com/gitops-k3s-flux/k3s_flux

go 1.26.8

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6
)
