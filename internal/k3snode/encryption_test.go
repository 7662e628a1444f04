package k3snode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEncryptionStatus(t *testing.T) {
	// As handlers.EncryptionStatus writes it, from a server after rotate-keys.
	s, err := ParseEncryptionStatus(`{"stage":"reencrypt_finished","activekey":"AES-CBC aescbckey-2026-12-07T05:00:00Z","enable":true,"hashmatch":true}`)
	require.NoError(t, err)
	require.NotNil(t, s.Enable)
	assert.True(t, *s.Enable)
	assert.Equal(t, EncryptionStatus{Stage: StageReencryptFinished, ActiveKey: "AES-CBC aescbckey-2026-12-07T05:00:00Z", Enable: s.Enable, HashMatch: true}, s)

	// No encryption config: enable and hashmatch left out.
	s, err = ParseEncryptionStatus(`{"stage":"start","activekey":""}`)
	require.NoError(t, err)
	assert.Nil(t, s.Enable)
	assert.False(t, s.HashMatch)

	_, err = ParseEncryptionStatus(`secret-encrypt error ID 12345`)
	assert.ErrorContains(t, err, "not the JSON k3s answers")
}

func TestReadEncryptionConfig(t *testing.T) {
	const key = `"keys":[{"name":"aescbckey","secret":"c2VjcmV0LWtleS1tYXRlcmlhbA=="}]`
	tests := []struct {
		name    string
		content string // "" for no file
		want    EncryptionConfigState
		wantErr string
	}{
		{name: "no file", want: EncryptionNoConfig},
		{name: "a new cluster's", content: `{"kind":"EncryptionConfiguration","apiVersion":"apiserver.config.k8s.io/v1","resources":[{"resources":["secrets"],"providers":[{"aescbc":{` + key + `}},{"identity":{}}]}]}`, want: EncryptionOn},
		{name: "secretbox", content: `{"resources":[{"providers":[{"secretbox":{` + key + `}},{"identity":{}}]}]}`, want: EncryptionOn},
		{name: "enable on a running cluster", content: `{"resources":[{"providers":[{"identity":{}}]}]}`, want: EncryptionIdentityOnly},
		{name: "disabled", content: `{"resources":[{"providers":[{"identity":{}},{"aescbc":{` + key + `}}]}]}`, want: EncryptionDisabled},
		{name: "no providers", content: `{"resources":[{"providers":[]}]}`, wantErr: "is not an EncryptionConfiguration with providers"},
		{name: "not JSON", content: `secret-key-material`, wantErr: "is not an EncryptionConfiguration with providers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			where := Paths{DataDir: t.TempDir()}
			if tt.content != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(EncryptionConfigFile(where)), 0o700))
				require.NoError(t, os.WriteFile(EncryptionConfigFile(where), []byte(tt.content), 0o600))
			}
			got, err := ReadEncryptionConfig(where)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "c2VjcmV0", "never the keys")
				assert.NotContains(t, err.Error(), "secret-key-material")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNextEncryptionStep(t *testing.T) {
	on, off := true, false
	tests := []struct {
		name    string
		status  EncryptionStatus
		want    EncryptionStep
		wantErr string
	}{
		{name: "no config", status: EncryptionStatus{}, want: EncryptionStepEnable},
		{name: "enabled with the identity provider only", status: EncryptionStatus{Stage: StageStart, Enable: &off, HashMatch: true}, want: EncryptionStepRotateKeys},
		{name: "on, a new cluster", status: EncryptionStatus{Stage: StageStart, ActiveKey: "AES-CBC aescbckey", Enable: &on, HashMatch: true}, want: EncryptionStepNone},
		{name: "on, keys rotated", status: EncryptionStatus{Stage: StageReencryptFinished, ActiveKey: "AES-CBC aescbckey-2026", Enable: &on, HashMatch: true}, want: EncryptionStepNone},
		{name: "on, a server still on the old config", status: EncryptionStatus{Stage: StageReencryptFinished, ActiveKey: "AES-CBC aescbckey-2026", Enable: &on, HashError: "hash does not match between node1 and node2"}, want: EncryptionStepRestart},
		{name: "disabled", status: EncryptionStatus{Stage: StageReencryptFinished, ActiveKey: "AES-CBC aescbckey", Enable: &off, HashMatch: true}, wantErr: "turned off on this cluster (k3s secrets-encrypt disable"},
		{name: "a rotation by hand", status: EncryptionStatus{Stage: StagePrepare, ActiveKey: "AES-CBC aescbckey", Enable: &on, HashMatch: true}, wantErr: `stage "prepare" of a key rotation by hand`},
		{name: "reencrypting", status: EncryptionStatus{Stage: StageReencryptActive, ActiveKey: "AES-CBC aescbckey", Enable: &on}, wantErr: "wait until k3s secrets-encrypt status says reencrypt_finished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NextEncryptionStep(tt.status)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "nothing was changed")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
