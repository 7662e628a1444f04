//go:build tools

// Package sourcecontroller pins Flux's source-controller, run by the test
// bed as a process against its API server (test tool only).
package sourcecontroller

import _ "github.com/fluxcd/source-controller"
