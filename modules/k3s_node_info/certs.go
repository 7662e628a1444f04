package k3snodeinfo

import (
	"fmt"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// k3sRenewalDays is how close to its expiry a server's certificate is
// renewed when k3s starts: pkg/daemons/config/types.go's
// CertificateRenewDays, which pkg/daemons/control/deps (createClientCertKey,
// expired) checks at every start. An agent asks the server for new ones at
// every start (pkg/agent/config, get), and k3s rewrites the admin
// kubeconfig at every server start (pkg/server, writeKubeConfig).
const k3sRenewalDays = 120

// certificateReport is what the module returns of k3s's certificates (the
// earliest to expire, read from certs sorted by expiry, and how many were
// read) and, when that one expires within days of now, the warning that
// says when and what renews it. No certificates: nothing to report.
func certificateReport(certs []k3snode.Certificate, now time.Time, days int) (map[string]any, string) {
	if len(certs) == 0 {
		return map[string]any{"count": 0}, ""
	}
	first := certs[0]
	left := k3snode.DaysLeft(first.NotAfter, now)
	report := map[string]any{
		"count": len(certs),
		"earliest": map[string]any{
			"path": first.Path, "subject": first.Subject,
			"not_after": first.NotAfter.UTC().Format(time.RFC3339), "days_left": left,
		},
	}
	if left >= days {
		return report, ""
	}
	which := fmt.Sprintf("k3s's certificate %q (%s)", first.Subject, first.Path)
	date := first.NotAfter.UTC().Format("2006-01-02")
	var when, fix string
	switch {
	case left < 0:
		when = fmt.Sprintf("expired on %s, %d days ago: what uses it is refused now", date, -left)
		fix = "restart k3s on each node, one at a time, to renew it"
	case left < k3sRenewalDays:
		when = fmt.Sprintf("expires on %s, in %d days", date, left)
		fix = "restart k3s on each node, one at a time, before then to renew it"
	default:
		renewable := first.NotAfter.AddDate(0, 0, -k3sRenewalDays).UTC().Format("2006-01-02")
		when = fmt.Sprintf("expires on %s, in %d days", date, left)
		fix = fmt.Sprintf("restart k3s on each node, one at a time, between %s and then to renew it", renewable)
	}
	if first.CA {
		return report, fmt.Sprintf("%s %s (certificate_warning_days is %d). It is a certificate authority's, which k3s neither renews nor rotates with the others: "+
			"replace it with k3s certificate rotate-ca, as docs.k3s.io's certificate management says, before then.", which, when, days)
	}
	return report, fmt.Sprintf("%s %s (certificate_warning_days is %d). k3s renews a server's certificates when it starts within %d days of their expiry, an agent's at every start: "+
		"%s (playbooks/reboot.yml does, draining each node first; or systemctl restart k3s, k3s-agent on an agent); "+
		"or rotate them now, whatever their expiry: playbooks/rotate_certs.yml (just ans rotate-certs), one node at a time.",
		which, when, days, k3sRenewalDays, fix)
}
