package k3setcdrestore

import (
	"context"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// Entry is the module, bound to this host, for binary cmd/k3s_node.
var Entry = ansible.Entry{Module: Module, Run: func(ctx context.Context, req *ansible.Request) (*ansible.Result, error) {
	return Run(ctx, req, ThisHost)
}}

// ThisHost is the machine the binary runs on.
var ThisHost = Host{Sys: k3snode.Real{}, BinDir: k3snode.DefaultPaths.BinDir, ConfigPath: k3sconfig.DefaultPath, Now: time.Now}
