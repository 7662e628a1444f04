package k3snodemodule

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

func TestRotation(t *testing.T) {
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	leaf := func(subject string, days int) k3snode.Certificate {
		return k3snode.Certificate{Path: "/var/lib/rancher/k3s/server/tls/" + subject + ".crt", Subject: subject, NotAfter: now.AddDate(0, 0, days)}
	}
	ca := k3snode.Certificate{Path: "/var/lib/rancher/k3s/server/tls/client-ca.crt", Subject: "k3s-client-ca", NotAfter: now.AddDate(0, 0, 5), CA: true}
	for _, tc := range []struct {
		name   string
		a      args
		certs  []k3snode.Certificate
		rotate bool
		why    string
	}{
		{name: "not asked", a: args{}, certs: []k3snode.Certificate{leaf("admin", 5)}},
		{name: "no certificates: k3s never ran", a: args{RotateCerts: true}},
		{name: "whatever the expiry", a: args{RotateCerts: true}, certs: []k3snode.Certificate{leaf("admin", 300)}, rotate: true,
			why: `the first to expire, "admin" (/var/lib/rancher/k3s/server/tls/admin.crt), expires on 2027-10-28, in 300 days`},
		{name: "due within the days", a: args{RotateCerts: true, RotateWithinDays: 90}, certs: []k3snode.Certificate{leaf("admin", 89), leaf("etcd", 300)}, rotate: true,
			why: `the first to expire, "admin" (/var/lib/rancher/k3s/server/tls/admin.crt), expires on 2027-03-31, in 89 days`},
		{name: "not due yet", a: args{RotateCerts: true, RotateWithinDays: 90}, certs: []k3snode.Certificate{leaf("admin", 90)}},
		{name: "expired", a: args{RotateCerts: true, RotateWithinDays: 90}, certs: []k3snode.Certificate{leaf("admin", -3)}, rotate: true,
			why: `the first to expire, "admin" (/var/lib/rancher/k3s/server/tls/admin.crt), expired on 2026-12-29`},
		{name: "a certificate authority's expiry is not one rotate renews", a: args{RotateCerts: true, RotateWithinDays: 90},
			certs: []k3snode.Certificate{ca, leaf("admin", 200)}},
		{name: "only certificate authorities", a: args{RotateCerts: true}, certs: []k3snode.Certificate{ca}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rotate, why := rotation(tc.a, state{Certs: tc.certs, Now: now})
			assert.Equal(t, tc.rotate, rotate)
			assert.Equal(t, tc.why, why)
		})
	}
}

// expiringServer is a server whose k3s runs with one certificate that
// expires in days, which the fake's k3s certificate rotate renews.
func expiringServer(t *testing.T, days int) (*fakeNode, k3snode.Paths) {
	t.Helper()
	where := testPaths(t)
	f := newFakeNode()
	f.version = testVersion
	f.units["k3s"] = &k3snode.UnitState{Loaded: true, Enabled: true, Active: true}
	path := filepath.Join(where.DataDir, "server", "tls", "client-admin.crt")
	raw, err := pki.SelfSigned("system:admin", time.Now().AddDate(0, 0, days))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	f.certs = []string{path}
	writeAdminKubeconfig(t, where)
	return f, where
}

// writeAdminKubeconfig writes k3s's admin kubeconfig, its client
// certificate valid a year.
func writeAdminKubeconfig(t *testing.T, where k3snode.Paths) {
	t.Helper()
	admin, err := pki.SelfSigned("system:admin", time.Now().AddDate(1, 0, 0))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(where.Kubeconfig, []byte("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: "+pki.B64([]byte("ca"))+
		"\n    server: https://127.0.0.1:6443\nusers:\n- name: default\n  user:\n    client-certificate-data: "+pki.B64(admin)+
		"\n    client-key-data: "+pki.B64([]byte("key"))+"\n"), 0o600))
}

func TestRotateCertificates(t *testing.T) {
	rotateArgs := map[string]any{"role": "server", "rotate_certificates": true, "rotate_within_days": 90}

	t.Run("check mode says what it would do and does nothing", func(t *testing.T) {
		f, where := expiringServer(t, 30)
		res, code := runOn(t, f, where, with(rotateArgs, "_ansible_check_mode", true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, true, res["certificates_rotated"])
		assert.Empty(t, f.changes())
		require.Len(t, res["actions"], 1)
		assert.Regexp(t, `^rotate k3s's certificates \(the first to expire, "system:admin" \(.*client-admin.crt\), expires on \S+, in 29 days\): stop k3s, k3s certificate rotate, start k3s$`, res["actions"].([]any)[0])
	})

	t.Run("due: stopped, rotated, started, waited for; then nothing to do", func(t *testing.T) {
		f, where := expiringServer(t, 30)
		res, code := runOn(t, f, where, with(rotateArgs, "_ansible_diff", true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, true, res["certificates_rotated"])
		assert.Equal(t, true, res["restart_done"])
		assert.Equal(t, true, res["ready"])
		assert.Equal(t, filepath.Join(where.DataDir, "server", "tls-1798761600"), res["certificates_backup"])
		assert.Equal(t, []string{
			"systemctl stop k3s.service",
			"k3s certificate rotate --data-dir " + where.DataDir,
			"systemctl start --no-block k3s.service",
		}, f.changes())
		diff := res["diff"].(map[string]any)
		assert.Contains(t, diff["after"], `(restarted with new certificates: the first to expire, "system:admin" (`)

		f.commands = nil
		res, code = runOn(t, f, where, rotateArgs)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["changed"], "the new certificates are not due")
		assert.Equal(t, false, res["certificates_rotated"])
		assert.Empty(t, f.changes())
	})

	t.Run("not due: nothing, not even the restart the config asked for is lost", func(t *testing.T) {
		f, where := expiringServer(t, 200)
		res, code := runOn(t, f, where, with(rotateArgs, "restart", true))
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["certificates_rotated"])
		assert.Equal(t, []string{"systemctl restart --no-block k3s.service"}, f.changes())
	})

	t.Run("a failed rotation starts k3s again and says so", func(t *testing.T) {
		f, where := expiringServer(t, 30)
		f.rotateErr = errors.New("exit status 1")
		res, code := runOn(t, f, where, rotateArgs)
		require.Equal(t, 1, code)
		assert.Equal(t, "k3s certificate rotate: exit status 1: level=fatal msg=\"Error: copy certificates: no space left on device\" (k3s was started again: k3s makes the certificates it lacks as it starts)", res["msg"])
		assert.Equal(t, []string{
			"systemctl stop k3s.service",
			"k3s certificate rotate --data-dir " + where.DataDir,
			"systemctl start --no-block k3s.service",
		}, f.changes())
		assert.True(t, f.units["k3s"].Active)
	})

	t.Run("k3s not installed: installed, nothing rotated", func(t *testing.T) {
		where := testPaths(t)
		require.NoError(t, os.Remove(where.Kubeconfig))
		f := newFakeNode()
		res, code := runOn(t, f, where, rotateArgs)
		require.Equal(t, 0, code, res["msg"])
		assert.Equal(t, false, res["certificates_rotated"])
		assert.NotContains(t, f.changes(), "k3s certificate rotate --data-dir "+where.DataDir)
	})
}

func TestRotateWithinDaysRefusesANegative(t *testing.T) {
	f, where := expiringServer(t, 30)
	res, code := runOn(t, f, where, map[string]any{"role": "server", "rotate_certificates": true, "rotate_within_days": -1})
	require.Equal(t, 1, code)
	assert.Equal(t, "rotate_within_days is -1: expected 0 (rotate whatever the expiry) or a number of days", res["msg"])
	assert.Empty(t, f.changes())
}

func TestCertificateBackup(t *testing.T) {
	assert.Equal(t, "/var/lib/rancher/k3s/agent/tls-1798761600", certificateBackup(`time="2027-01-01T00:00:00Z" level=info msg="Successfully backed up certificates to /var/lib/rancher/k3s/agent/tls-1798761600, please restart k3s server or agent to rotate certificates"`))
	assert.Empty(t, certificateBackup("something else"))
}
