package k3sfirewall

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

type args struct {
	State            string   `json:"state"`
	Role             string   `json:"role"`
	Etcd             bool     `json:"etcd"`
	FlannelBackend   string   `json:"flannel_backend"`
	APIPort          int      `json:"api_port"`
	EmbeddedRegistry bool     `json:"embedded_registry"`
	ClusterCIDR      []string `json:"cluster_cidr"`
	ServiceCIDR      []string `json:"service_cidr"`
}

// want is the module's arguments as the firewall package reads them.
func (a args) want() firewall.Want {
	return firewall.Want{Role: a.Role, Etcd: a.Etcd, FlannelBackend: a.FlannelBackend, APIPort: a.APIPort,
		EmbeddedRegistry: a.EmbeddedRegistry, ClusterCIDRs: a.ClusterCIDR, ServiceCIDRs: a.ServiceCIDR}
}

// run reads the firewall, plans what is missing and (not in check mode)
// adds it, one command at a time.
func run(ctx context.Context, req *ansible.Request, h firewall.Host) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if err := a.canonicalNetworks(); err != nil {
		return nil, err
	}
	needed := firewall.Needed(a.want())
	state, err := firewall.Read(ctx, h)
	if err != nil {
		return nil, err
	}
	if a.State == "absent" {
		return remove(ctx, req, h, state)
	}
	missing := firewall.Missing(state, needed)
	res := &ansible.Result{Changed: len(missing) > 0}
	res.Set("firewall", state.Firewall)
	res.Set("needed", strs(needed))
	res.Set("added", strs(missing))
	res.Set("removed", []string{})
	var after []string
	for _, r := range missing {
		after = append(after, firewall.Listed(state.Firewall, r))
	}
	res.Diff = rulesDiff(state, append(append([]string{}, state.Allowed...), after...))
	return res, runCommands(ctx, req, h, state.Firewall, firewall.Commands(state.Firewall, missing))
}

// remove takes out the ufw rules this collection added.
func remove(ctx context.Context, req *ansible.Request, h firewall.Host, state firewall.State) (*ansible.Result, error) {
	res := &ansible.Result{Changed: len(state.Own) > 0}
	res.Set("firewall", state.Firewall)
	res.Set("needed", []string{})
	res.Set("added", []string{})
	res.Set("removed", append([]string{}, state.Own...))
	if state.Firewall == firewall.Firewalld {
		req.Warn("firewalld keeps no mark of who added a port: the ports k3s needed are left open (firewall-cmd --permanent --remove-port=... takes them out)")
	}
	var kept []string
	for _, r := range state.Allowed {
		if !slices.Contains(state.Own, r) {
			kept = append(kept, r)
		}
	}
	res.Diff = rulesDiff(state, kept)
	return res, runCommands(ctx, req, h, state.Firewall, firewall.RemoveCommands(state))
}

// rulesDiff is the firewall's rules before and after, when they differ.
func rulesDiff(state firewall.State, after []string) []ansible.Diff {
	if slices.Equal(state.Allowed, after) {
		return nil
	}
	text := func(rules []string) string {
		if len(rules) == 0 {
			return ""
		}
		return strings.Join(rules, "\n") + "\n"
	}
	header := state.Firewall + " rules"
	return []ansible.Diff{{Before: text(state.Allowed), After: text(after), BeforeHeader: header, AfterHeader: header}}
}

// runCommands runs commands, one at a time, unless in check mode.
func runCommands(ctx context.Context, req *ansible.Request, h firewall.Host, fw string, commands [][]string) error {
	if req.CheckMode {
		return nil
	}
	for _, argv := range commands {
		if _, err := h.Run(ctx, argv...); err != nil {
			return fmt.Errorf("change %s (%s): %w", fw, strings.Join(argv, " "), err)
		}
	}
	return nil
}

// added is a rule as the diff shows it, in the form state.Allowed lists.
func strs(rules []firewall.Rule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}

// canonicalNetworks writes the pod and service networks as the firewall
// lists them, or refuses one that is not a cluster's network, naming its
// option: it would reach ufw's or firewalld's command line as something
// else, or open the host wider than k3s needs.
func (a *args) canonicalNetworks() error {
	for _, o := range []struct {
		name  string
		cidrs []string
	}{{"cluster_cidr", a.ClusterCIDR}, {"service_cidr", a.ServiceCIDR}} {
		for i, c := range o.cidrs {
			network, err := firewall.Network(c)
			if err != nil {
				return fmt.Errorf("%s: %w", o.name, err)
			}
			o.cidrs[i] = network
		}
	}
	return nil
}
