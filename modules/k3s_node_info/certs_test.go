package k3snodeinfo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

func TestCertificateReport(t *testing.T) {
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	cert := func(notAfter time.Time) []k3snode.Certificate {
		return []k3snode.Certificate{
			{Path: "/var/lib/rancher/k3s/server/tls/client-admin.crt", Subject: "system:admin", NotAfter: notAfter},
			{Path: "/var/lib/rancher/k3s/server/tls/server-ca.crt", Subject: "k3s-server-ca", NotAfter: notAfter.AddDate(9, 0, 0)},
		}
	}
	const renew = " k3s renews a server's certificates when it starts within 120 days of their expiry, an agent's at every start: "
	const how = " (playbooks/reboot.yml does, draining each node first; or systemctl restart k3s, k3s-agent on an agent);" +
		" or rotate them now, whatever their expiry: playbooks/rotate_certs.yml (just ans rotate-certs), one node at a time."
	for _, tc := range []struct {
		name     string
		certs    []k3snode.Certificate
		days     int
		left     int
		wantWarn string
	}{
		{name: "none read (no k3s)", days: 90},
		{name: "a year left", certs: cert(now.AddDate(1, 0, 0)), days: 90, left: 365},
		{name: "the threshold itself: no warning", certs: cert(now.AddDate(0, 0, 90)), days: 90, left: 90},
		{name: "within the threshold and k3s's 120 days", certs: cert(now.AddDate(0, 0, 45)), days: 90, left: 45,
			wantWarn: `k3s's certificate "system:admin" (/var/lib/rancher/k3s/server/tls/client-admin.crt) expires on 2027-02-15, in 45 days (certificate_warning_days is 90).` +
				renew + "restart k3s on each node, one at a time, before then to renew it" + how},
		{name: "within a wider threshold, before k3s would renew it", certs: cert(now.AddDate(0, 0, 130)), days: 150, left: 130,
			wantWarn: `k3s's certificate "system:admin" (/var/lib/rancher/k3s/server/tls/client-admin.crt) expires on 2027-05-11, in 130 days (certificate_warning_days is 150).` +
				renew + "restart k3s on each node, one at a time, between 2027-01-11 and then to renew it" + how},
		{name: "expired", certs: cert(now.AddDate(0, 0, -3)), days: 90, left: -3,
			wantWarn: `k3s's certificate "system:admin" (/var/lib/rancher/k3s/server/tls/client-admin.crt) expired on 2026-12-29, 3 days ago: what uses it is refused now (certificate_warning_days is 90).` +
				renew + "restart k3s on each node, one at a time, to renew it" + how},
		{name: "hours left: expires today, 0 days", certs: cert(now.Add(5 * time.Hour)), days: 90, left: 0,
			wantWarn: `k3s's certificate "system:admin" (/var/lib/rancher/k3s/server/tls/client-admin.crt) expires on 2027-01-01, in 0 days (certificate_warning_days is 90).` +
				renew + "restart k3s on each node, one at a time, before then to renew it" + how},
		{name: "a certificate authority's", certs: []k3snode.Certificate{{Path: "/var/lib/rancher/k3s/server/tls/server-ca.crt", Subject: "k3s-server-ca", NotAfter: now.AddDate(0, 0, 60), CA: true}, cert(now.AddDate(1, 0, 0))[0]},
			days: 90, left: 60,
			wantWarn: `k3s's certificate "k3s-server-ca" (/var/lib/rancher/k3s/server/tls/server-ca.crt) expires on 2027-03-02, in 60 days (certificate_warning_days is 90).` +
				" It is a certificate authority's, which k3s neither renews nor rotates with the others: replace it with k3s certificate rotate-ca, as docs.k3s.io's certificate management says, before then."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report, warning := certificateReport(tc.certs, now, tc.days)
			assert.Equal(t, tc.wantWarn, warning)
			if len(tc.certs) == 0 {
				assert.Equal(t, map[string]any{"count": 0}, report)
				return
			}
			assert.Equal(t, map[string]any{"count": 2, "earliest": map[string]any{
				"path": tc.certs[0].Path, "subject": tc.certs[0].Subject,
				"not_after": tc.certs[0].NotAfter.Format(time.RFC3339), "days_left": tc.left,
			}}, report)
		})
	}
}
