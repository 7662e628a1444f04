//go:build tools

// Package kustomizecontroller pins Flux's kustomize-controller, run by the
// test bed as a process against its API server (test tool only).
package kustomizecontroller

import _ "github.com/fluxcd/kustomize-controller"
