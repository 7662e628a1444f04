package k3snodeinfo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
	"github.com/gitops-k3s-flux/k3s_flux/internal/preflight"
)

func run(ctx context.Context, req *ansible.Request, sys k3snode.System, where k3snode.Paths) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if a.CertWarningDays < 0 {
		return nil, fmt.Errorf("certificate_warning_days is %d: expected 0 (certificates not read) or a number of days", a.CertWarningDays)
	}
	where.DataDir, where.Kubeconfig = a.DataDir, a.KubeconfigPath
	res := &ansible.Result{}
	res.Set("version", k3snode.Version(ctx, sys, where))
	units := map[string]any{}
	k3sRunning := false
	for _, name := range k3snode.Units {
		u, err := k3snode.Unit(ctx, sys, name)
		if err != nil {
			return res, err
		}
		units[name] = u
		k3sRunning = k3sRunning || u.Active
	}
	res.Set("units", units)
	// k3s's node name when the config sets no node-name.
	host, err := os.Hostname()
	if err != nil {
		return res, fmt.Errorf("read the host name: %w", err)
	}
	res.Set("hostname", strings.ToLower(host))
	nodeID := k3snode.NodeID(where)
	res.Set("node_id", nodeID)
	// As k3s_config computes it, so that role k8s_cluster can refuse two hosts under one name before either installs.
	res.Set("node_name", k3sconfig.NodeName(map[string]any{"node-name": a.NodeName, "with-node-id": a.WithNodeID},
		func() (string, error) { return host, nil }, func() string { return nodeID }))
	// Whom the node joined (a rebuilt first controller keeps it: role k8s_cluster).
	res.Set("server", k3sconfig.FileValue(configPath, "server"))
	// Before the secrets: a failed read's message is shown only from a result
	// that holds none.
	if a.CertWarningDays > 0 {
		certs, err := k3snode.Certificates(where)
		if err != nil {
			return res, err
		}
		report, warning := certificateReport(certs, time.Now(), a.CertWarningDays)
		res.Set("certificates", report)
		if warning != "" {
			req.Warn("%s", warning)
		}
	}
	// Both files are read before either is returned: a failed read returns
	// no secret, so its message can be shown (the action plugin hides a
	// result that holds one).
	var token, kubeconfig string
	if a.ReturnToken {
		if token, err = k3snode.Token(where); err != nil {
			return res, err
		}
	}
	if a.ReturnKubeconfig {
		if kubeconfig, err = k3snode.Kubeconfig(where); err != nil {
			return res, err
		}
	}
	if a.ReturnToken {
		res.Set("token", token)
	}
	if a.ReturnKubeconfig {
		res.Set("kubeconfig", kubeconfig)
	}
	if a.Preflight != nil {
		// For the clock check, which the action plugin makes against the controller's.
		res.Set("node_time", float64(time.Now().UnixNano())/1e9)
		return res, checkReady(req, res, *a.Preflight, a.DataDir, k3sRunning)
	}
	return res, nil
}

// configPath is k3s's config file, read with its drop-ins.
var configPath = k3sconfig.DefaultPath

// thisHost is the node as the preflight checks read it (tests lay one out
// in a directory).
var thisHost = preflight.ThisHost

// checkReady runs the preflight checks, sets their findings and, in strict
// mode, fails on an error finding, naming each.
func checkReady(req *ansible.Request, res *ansible.Result, p preflightArgs, dataDir string, k3sRunning bool) error {
	host := thisHost()
	if read := host.Firewall; read != nil {
		// Which firewall to open (module k3s_firewall): role k8s_cluster skips that task where none is active.
		// Read once: the checks get the same answer (firewalld's is three firewall-cmd runs).
		state, err := read()
		if err == nil {
			res.Set("firewall", state.Firewall)
		}
		host.Firewall = func() (firewall.State, error) { return state, err }
	}
	findings := preflight.Check(host, preflight.Want{Role: p.Role, Etcd: p.Etcd, FlannelBackend: p.FlannelBackend,
		InstallSource: p.InstallSource, DataDir: dataDir, APIPort: p.APIPort, K3sRunning: k3sRunning,
		ClusterCIDRs: p.ClusterCIDR, ServiceCIDRs: p.ServiceCIDR, EmbeddedRegistry: p.EmbeddedRegistry, FirewallOpened: p.FirewallOpened})
	if p.RebootPending {
		findings = preflight.RebootPending(findings)
	}
	if findings == nil {
		findings = []preflight.Finding{}
	}
	res.Set("preflight", findings)
	var errs []string
	for _, f := range findings {
		text := fmt.Sprintf("%s: %s. Fix: %s", f.Check, f.Seen, f.Fix)
		if f.Severity == preflight.Error && p.Mode == "strict" {
			errs = append(errs, text)
			continue
		}
		req.Warn("not ready for k3s (%s): %s", f.Severity, text)
	}
	if len(errs) > 0 {
		article := map[string]string{"server": "a", "agent": "an"}[p.Role]
		return fmt.Errorf("this host is not ready for k3s as %s %s (nothing was changed): %s", article, p.Role, strings.Join(errs, "; "))
	}
	return nil
}
