//go:build tools

// Package etcd pins etcd for the test bed's API server (test tool only).
package etcd

import _ "go.etcd.io/etcd/server/v3"
