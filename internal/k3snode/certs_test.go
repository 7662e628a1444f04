package k3snode

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

// testCertPEM is a self-signed certificate named cn, valid until notAfter, in PEM.
func testCertPEM(t *testing.T, cn string, notAfter time.Time) []byte {
	t.Helper()
	raw, err := pki.SelfSigned(cn, notAfter)
	require.NoError(t, err)
	return raw
}

func TestCertificates(t *testing.T) {
	day := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(path string, raw []byte) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, raw, 0o600))
	}

	t.Run("a server's, an agent's chain and the admin kubeconfig's, earliest first; keys and other files not read", func(t *testing.T) {
		where := Paths{DataDir: t.TempDir(), Kubeconfig: filepath.Join(t.TempDir(), "k3s.yaml")}
		write(filepath.Join(where.DataDir, "server", "tls", "serving-kube-apiserver.crt"), testCertPEM(t, "kube-apiserver", day.AddDate(0, 0, 30)))
		write(filepath.Join(where.DataDir, "server", "tls", "etcd", "server-client.crt"), testCertPEM(t, "etcd-server", day.AddDate(0, 0, 20)))
		write(filepath.Join(where.DataDir, "server", "tls", "serving-kube-apiserver.key"), []byte("not read"))
		write(filepath.Join(where.DataDir, "server", "tls", "dynamic-cert.json"), []byte("not read"))
		chain := append(testCertPEM(t, "system:node:node1", day.AddDate(0, 0, 40)), testCertPEM(t, "k3s-client-ca", day.AddDate(10, 0, 0))...)
		write(filepath.Join(where.DataDir, "agent", "client-kubelet.crt"), chain)
		admin := testCertPEM(t, "system:admin", day.AddDate(0, 0, 10))
		write(where.Kubeconfig, []byte("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: "+base64.StdEncoding.EncodeToString([]byte("ca"))+
			"\n    server: https://127.0.0.1:6443\nusers:\n- name: default\n  user:\n    client-certificate-data: "+base64.StdEncoding.EncodeToString(admin)+
			"\n    client-key-data: "+base64.StdEncoding.EncodeToString([]byte("key"))+"\n"))
		certs, err := Certificates(where)
		require.NoError(t, err)
		var got []string
		for _, c := range certs {
			got = append(got, c.Subject+" "+c.NotAfter.Format("2006-01-02")+" "+filepath.Base(c.Path))
		}
		assert.Equal(t, []string{
			"system:admin 2027-01-11 k3s.yaml",
			"etcd-server 2027-01-21 server-client.crt",
			"kube-apiserver 2027-01-31 serving-kube-apiserver.crt",
			"system:node:node1 2027-02-10 client-kubelet.crt",
			"k3s-client-ca 2037-01-01 client-kubelet.crt",
		}, got)
	})

	t.Run("the backups of k3s certificate rotate are not k3s's certificates", func(t *testing.T) {
		where := Paths{DataDir: t.TempDir(), Kubeconfig: filepath.Join(t.TempDir(), "k3s.yaml")}
		write(filepath.Join(where.DataDir, "agent", "client-kubelet.crt"), testCertPEM(t, "system:node:node1", day.AddDate(1, 0, 0)))
		write(filepath.Join(where.DataDir, "agent", "tls-1798761600", "client-kubelet.crt"), testCertPEM(t, "system:node:node1", day.AddDate(0, 0, 5)))
		write(filepath.Join(where.DataDir, "server", "tls-1798761600", "client-admin.crt"), testCertPEM(t, "system:admin", day.AddDate(0, 0, 5)))
		write(filepath.Join(where.DataDir, "agent", "tls-notabackup", "client.crt"), testCertPEM(t, "other", day.AddDate(0, 0, 50)))
		certs, err := Certificates(where)
		require.NoError(t, err)
		require.Len(t, certs, 2)
		assert.Equal(t, "other", certs[0].Subject, "a directory k3s does not name so is read")
		assert.Equal(t, filepath.Join(where.DataDir, "agent", "client-kubelet.crt"), certs[1].Path)
	})

	t.Run("no k3s: none", func(t *testing.T) {
		certs, err := Certificates(Paths{DataDir: filepath.Join(t.TempDir(), "none"), Kubeconfig: filepath.Join(t.TempDir(), "k3s.yaml")})
		require.NoError(t, err)
		assert.Empty(t, certs)
	})

	t.Run("a .crt without a certificate fails, naming it", func(t *testing.T) {
		where := Paths{DataDir: t.TempDir(), Kubeconfig: filepath.Join(t.TempDir(), "k3s.yaml")}
		path := filepath.Join(where.DataDir, "agent", "client-kubelet.crt")
		write(path, []byte("garbage"))
		_, err := Certificates(where)
		require.EqualError(t, err, "read k3s's certificates: "+path+": no PEM certificate in it")
	})
}

func TestIsCertificateBackup(t *testing.T) {
	for name, want := range map[string]bool{
		"tls-1798761600": true, "tls-1": true,
		"tls-": false, "tls": false, "tls-12a": false, "xtls-12": false, "temporary-certs": false, "etcd": false,
	} {
		assert.Equal(t, want, IsCertificateBackup(name), name)
	}
}
