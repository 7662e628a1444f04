//go:build tools

// Package fluxoperator pins the Flux Operator, run by the test bed as a
// process against its API server. A test tool only: the operator is AGPL
// and is never linked into the collection.
package fluxoperator

import _ "github.com/controlplaneio-fluxcd/flux-operator/cmd/operator"
