package k3sfirewall

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/firewall"
)

type args struct {
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

// Run reads the firewall, plans what is missing and (not in check mode)
// adds it, one command at a time.
func Run(ctx context.Context, req *ansible.Request, h firewall.Host) (*ansible.Result, error) {
	var a args
	if err := req.Decode(&a); err != nil {
		return nil, err
	}
	if err := checkCIDRs(a); err != nil {
		return nil, err
	}
	needed := firewall.Needed(a.want())
	state, err := firewall.Read(ctx, h)
	if err != nil {
		return nil, err
	}
	missing := firewall.Missing(state, needed)
	res := &ansible.Result{Changed: len(missing) > 0}
	res.Set("firewall", state.Firewall)
	res.Set("needed", strs(needed))
	res.Set("added", strs(missing))
	if len(missing) > 0 {
		before := strings.Join(state.Allowed, "\n")
		if before != "" {
			before += "\n"
		}
		after := before
		for _, r := range missing {
			after += added(state.Firewall, r) + "\n"
		}
		res.Diff = []ansible.Diff{{Before: before, After: after, BeforeHeader: state.Firewall + " rules", AfterHeader: state.Firewall + " rules"}}
	}
	if req.CheckMode {
		return res, nil
	}
	for _, argv := range firewall.Commands(state.Firewall, missing) {
		if _, err := h.Run(ctx, argv...); err != nil {
			return res, fmt.Errorf("open k3s's ports in %s (%s): %w", state.Firewall, strings.Join(argv, " "), err)
		}
	}
	return res, nil
}

// added is a rule as the diff shows it, in the form state.Allowed lists.
func added(fw string, r firewall.Rule) string {
	if fw == firewall.UFW {
		return "allow " + r.String()
	}
	if r.From != "" {
		return r.String()
	}
	return strings.ReplaceAll(r.Ports, ":", "-") + "/" + r.Proto
}

func strs(rules []firewall.Rule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}

// checkCIDRs refuses a network that is not one: it would reach ufw's or
// firewalld's command line as something else.
func checkCIDRs(a args) error {
	for _, o := range []struct {
		name  string
		cidrs []string
	}{{"cluster_cidr", a.ClusterCIDR}, {"service_cidr", a.ServiceCIDR}} {
		for _, c := range o.cidrs {
			if _, err := netip.ParsePrefix(c); err != nil {
				return fmt.Errorf("%s: %q is not a network in CIDR notation (such as 10.42.0.0/16)", o.name, c)
			}
		}
	}
	return nil
}
