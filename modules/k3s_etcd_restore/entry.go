// Package k3setcdrestore is the k3s_etcd_restore module, served by the
// k3s_node binary: the node's part of restoring an etcd snapshot the way
// k3s documents it (playbooks/restore.yml runs the steps across servers).
package k3setcdrestore

import (
	"context"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return run(ctx, req, thisHost)
}}

// thisHost is the machine the binary runs on.
var thisHost = host{Sys: k3snode.Real{}, BinDir: k3snode.DefaultPaths.BinDir, ConfigPath: k3sconfig.DefaultPath, Now: time.Now}
