module github.com/gitops-k3s-flux/k3s_flux/tests/tools/sourcecontroller

go 1.26.0

require (
	github.com/fluxcd/source-controller v1.9.5
	github.com/fluxcd/source-controller/api v1.9.5
)

// Versions source-controller v1.9.5 asks for that the module proxy refuses.
replace (
	github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0
	github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be
)
