package k3snode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Secrets encryption, as k3s's supervisor manages it (pkg/server/handlers/
// secrets-encrypt.go) and `k3s secrets-encrypt` asks it
// (pkg/cli/secretsencrypt/secrets_encrypt.go): the same requests, as user
// "server" with the cluster secret (Real.Supervisor).

// EncryptionStatusPath answers `k3s secrets-encrypt status`: GET, the JSON
// EncryptionStatus (handlers.EncryptionStatus). It is also TokenCheckPath.
const EncryptionStatusPath = "/v1-k3s/encrypt/status"

// EncryptionConfigPath takes `k3s secrets-encrypt enable` and the stages:
// PUT, a JSON EncryptionRequest (handlers.EncryptionConfig). An error comes
// back as "secret-encrypt error ID <n>", its text only in k3s's journal
// (pkg/util/apierrors.go, SendErrorWithID).
const EncryptionConfigPath = "/v1-k3s/encrypt/config"

// The stages of k3s's encryption hash annotation (pkg/secretsencrypt/
// config.go): a server's own, from its Node's k3s.io/encryption-config-hash.
const (
	StageStart             = "start"
	StagePrepare           = "prepare"
	StageRotate            = "rotate"
	StageReencryptActive   = "reencrypt_active"
	StageReencryptFinished = "reencrypt_finished"
)

// EncryptionStatus is what EncryptionStatusPath answers
// (handlers.EncryptionState): Enable is nil where the server has no
// encryption config at all, ActiveKey names the key new Secrets are written
// with ("AES-CBC aescbckey-..."; a name, never key material), HashMatch
// says every server's annotation holds the same hash.
type EncryptionStatus struct {
	Stage        string   `json:"stage"`
	ActiveKey    string   `json:"activekey"`
	Enable       *bool    `json:"enable,omitempty"`
	HashMatch    bool     `json:"hashmatch,omitempty"`
	HashError    string   `json:"hasherror,omitempty"`
	InactiveKeys []string `json:"inactivekeys,omitempty"`
}

// ParseEncryptionStatus reads EncryptionStatusPath's answer.
func ParseEncryptionStatus(body string) (EncryptionStatus, error) {
	var s EncryptionStatus
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return EncryptionStatus{}, fmt.Errorf("k3s's secrets encryption status is not the JSON k3s answers: %w", err)
	}
	return s, nil
}

// EnableEncryptionBody is what `k3s secrets-encrypt enable` sends: on a
// server without an encryption config, k3s writes one with the identity
// provider only and saves it in the datastore for the other servers
// (handlers.encryptionEnable, secretsencrypt.WriteIdentityConfig).
func EnableEncryptionBody() []byte { return []byte(`{"enable":true,"force":false,"skip":false}`) }

// RotateKeysBody is what `k3s secrets-encrypt rotate-keys` sends: a new key
// added and made active, every Secret written again with it, the old key
// removed (handlers.encryptionRotateKeys); refused unless every server is
// at StageStart or StageReencryptFinished with the same hash.
func RotateKeysBody() []byte {
	return []byte(`{"stage":"rotate_keys","force":false,"skip":false}`)
}

// EncryptionConfigFile is the server's encryption config, which k3s writes
// with secrets-encryption (pkg/daemons/control/deps/deps.go,
// genEncryptionConfigAndState) and keeps in the datastore for the other
// servers. It holds the keys: only the providers' kinds are ever read here.
func EncryptionConfigFile(where Paths) string {
	return filepath.Join(where.DataDir, "server", "cred", "encryption-config.json")
}

// EncryptionConfigState is what a server's encryption config says, read
// without its keys.
type EncryptionConfigState int

const (
	// EncryptionNoConfig: no encryption config; Secrets in the clear.
	EncryptionNoConfig EncryptionConfigState = iota
	// EncryptionIdentityOnly: `secrets-encrypt enable` on a running cluster
	// wrote the identity provider alone; no key yet, Secrets in the clear.
	EncryptionIdentityOnly
	// EncryptionOn: a key provider first; Secrets written encrypted.
	EncryptionOn
	// EncryptionDisabled: identity first, a key provider after it (`k3s
	// secrets-encrypt disable`): Secrets written in the clear, older ones
	// readable with the keys kept.
	EncryptionDisabled
)

// ReadEncryptionConfig reads which providers the server's encryption config
// lists, in order (EncryptionConfigFile). The error names the file and the
// cause, never content: the file holds the keys.
func ReadEncryptionConfig(where Paths) (EncryptionConfigState, error) {
	path := EncryptionConfigFile(where)
	raw, err := readSecretFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return EncryptionNoConfig, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read k3s's encryption config %s: %w", path, err)
	}
	var config struct {
		Resources []struct {
			Providers []map[string]json.RawMessage `json:"providers"`
		} `json:"resources"`
	}
	if json.Unmarshal(raw, &config) != nil || len(config.Resources) == 0 || len(config.Resources[0].Providers) == 0 {
		return 0, fmt.Errorf("k3s's encryption config %s is not an EncryptionConfiguration with providers", path)
	}
	return encryptionConfigState(config.Resources[0].Providers), nil
}

// encryptionConfigState classifies providers as k3s's status does
// (handlers.encryptionStatus): a key provider first is on; identity first
// with a key provider after it is disabled; identity alone is the state
// enable leaves before the first key.
func encryptionConfigState(providers []map[string]json.RawMessage) EncryptionConfigState {
	isKey := func(p map[string]json.RawMessage) bool { return p["aescbc"] != nil || p["secretbox"] != nil }
	switch {
	case isKey(providers[0]):
		return EncryptionOn
	case len(providers) > 1 && isKey(providers[1]):
		return EncryptionDisabled
	default:
		return EncryptionIdentityOnly
	}
}

// EncryptionStep is what turning secrets encryption on needs next on a
// running cluster, as k3s documents it for one (docs.k3s.io, "Secrets
// Encryption"; k3s's tests/docker/secretsencryption): enable once, every
// server restarted with secrets-encryption, rotate-keys once, every other
// server restarted so that it takes the new key from the datastore.
type EncryptionStep string

const (
	// EncryptionStepNone: on, with a key, every server on the same config.
	EncryptionStepNone EncryptionStep = ""
	// EncryptionStepEnable: no encryption config: enable, on one server.
	EncryptionStepEnable EncryptionStep = "enable"
	// EncryptionStepRotateKeys: the identity provider alone: rotate-keys,
	// on one server, once every server runs with secrets-encryption.
	EncryptionStepRotateKeys EncryptionStep = "rotate_keys"
	// EncryptionStepRestart: on, but the servers' configs differ (hashes
	// do not match): the servers whose active key is not the cluster's
	// restart to take the cluster's config from the datastore.
	EncryptionStepRestart EncryptionStep = "restart"
)

// NextEncryptionStep decides from a server's status what turning
// encryption on needs next. It refuses what it must not go on from: a
// cluster where encryption was disabled (`k3s secrets-encrypt disable`),
// and one in the middle of k3s's older prepare, rotate and reencrypt
// stages or a reencryption still running.
func NextEncryptionStep(s EncryptionStatus) (EncryptionStep, error) {
	switch s.Stage {
	case StagePrepare, StageRotate:
		return "", fmt.Errorf("k3s's secrets encryption is at stage %q of a key rotation by hand (k3s secrets-encrypt prepare, rotate, reencrypt): finish it with k3s secrets-encrypt first; nothing was changed", s.Stage)
	case StageReencryptActive:
		return "", errors.New("k3s is writing every Secret again with a new key (stage reencrypt_active): wait until k3s secrets-encrypt status says reencrypt_finished; nothing was changed")
	}
	switch {
	case s.Enable == nil:
		return EncryptionStepEnable, nil
	case !*s.Enable && s.ActiveKey == "":
		return EncryptionStepRotateKeys, nil
	case !*s.Enable:
		return "", errors.New("secrets encryption was turned off on this cluster (k3s secrets-encrypt disable; its keys are kept): turn it on again with k3s secrets-encrypt enable and a restart of every server; nothing was changed")
	case !s.HashMatch:
		return EncryptionStepRestart, nil
	}
	return EncryptionStepNone, nil
}
