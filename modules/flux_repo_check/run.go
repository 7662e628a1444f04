package fluxrepocheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/knownhosts"
	"github.com/gitops-k3s-flux/k3s_flux/internal/repocheck"
)

type args struct {
	Path        string   `json:"path"`
	Instance    string   `json:"instance"`
	Secrets     []string `json:"secrets"`
	ConfigMaps  []string `json:"config_maps"`
	KnownHosts  *string  `json:"known_hosts"`
	HostNetwork bool     `json:"host_network"`
}

// cacheDir keeps the last clean report per repository, beside the binaries
// the action plugins keep: ${XDG_CACHE_HOME:-~/.cache}/gitops.k3s_flux.
func cacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gitops.k3s_flux", "repo_check")
}

func run(_ context.Context, req *ansible.Request) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if info, err := os.Stat(a.Path); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("path %s: not a directory", a.Path)
	}
	if a.Instance == "" {
		a.Instance = filepath.Join(a.Path, "flux", "cluster.yaml")
	}
	for option, names := range map[string][]string{"secrets": a.Secrets, "config_maps": a.ConfigMaps} {
		for _, s := range names {
			if ns, name, ok := strings.Cut(s, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return nil, fmt.Errorf("%s: %q is not namespace/name", option, s)
			}
		}
	}
	raw, err := os.ReadFile(a.Instance)
	if err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	o := repocheck.Options{Root: a.Path, Instance: raw, InstanceFile: a.Instance, Secrets: a.Secrets, ConfigMaps: a.ConfigMaps, HostNetwork: a.HostNetwork, CacheDir: cacheDir()}
	if a.KnownHosts != nil {
		var forge bool
		// what seed_secret writes for "github", "gitlab" or "codeberg"
		if o.KnownHosts, forge = knownhosts.Hosts(*a.KnownHosts); !forge {
			o.KnownHosts = repocheck.HostsOf(*a.KnownHosts)
		}
	}
	report, err := repocheck.Check(o)
	if err != nil {
		return nil, err
	}
	res := &ansible.Result{}
	res.Set("problems", report.Problems)
	res.Set("kustomizations", report.Kustomizations)
	res.Set("excluded", report.Excluded)
	res.Set("skipped", report.Skipped)
	res.Set("cached", report.Cached)
	for _, w := range report.Warnings {
		req.Warn("%s; fix: %s", w.Message, w.Fix)
	}
	if len(report.Problems) == 0 {
		return res, nil
	}
	return res, problemsError(a.Path, report.Problems)
}

// problemsError is the failure's msg: the credentials a push would
// publish, then what Flux would fail on, each with its fix.
func problemsError(path string, problems []repocheck.Problem) error {
	var credentials, flux []string
	for _, p := range problems {
		line := p.Message
		if p.Fix != "" {
			line += "; fix: " + p.Fix
		}
		if p.Kind == "credential" {
			credentials = append(credentials, line)
		} else {
			flux = append(flux, line)
		}
	}
	var parts []string
	if len(credentials) > 0 {
		parts = append(parts, fmt.Sprintf("A push of %s would publish credentials: %s", path, strings.Join(credentials, " | ")))
	}
	if len(flux) > 0 {
		parts = append(parts, fmt.Sprintf("Flux would fail on %s: %s", path, strings.Join(flux, " | ")))
	}
	return errors.New(strings.Join(parts, ". "))
}
