// Package k3setcdsnapshot is the k3s_etcd_snapshot module, served by the
// k3s_node binary: it takes an etcd snapshot on a k3s server with embedded
// etcd, by k3s's own `k3s etcd-snapshot save`, and lists the kept ones.
package k3setcdsnapshot

import (
	"context"
	"path/filepath"
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
var thisHost = host{
	K3s:     runK3s(filepath.Join(k3snode.DefaultPaths.BinDir, "k3s")),
	Secrets: func() []string { return k3sconfig.FileSecrets(k3sconfig.DefaultPath) },
	Now:     time.Now,
}
