package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

func TestRESTConfigHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))
	for _, tc := range []struct {
		name, host, want string
	}{
		{name: "the kubeconfig's server", want: "https://10.0.0.1:6443"},
		{name: "host instead, the credentials kept", host: "https://10.0.0.2:6443", want: "https://10.0.0.2:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Connection{Kubeconfig: path, Host: tc.host}.RESTConfig()
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.Host)
			assert.Equal(t, "abc", cfg.BearerToken)
		})
	}
}
