package k3snodemodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3sconfig"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// Secrets encryption on a running cluster, as k3s documents it (docs.k3s.io,
// "Secrets Encryption"; k3s's tests/docker/secretsencryption): enable once,
// on one server (secrets_encryption=enable), every server restarted with
// secrets-encryption (the others: secrets_encryption=follow), then
// rotate-keys once on that server (encryption_keys=ensure, or rotate to
// rotate again), and every other server restarted to take the new key from
// the datastore (encryption_keys=follow).

// encryptionFacts is what a server task's encryption decision reads:
// whether the config it writes turns secrets encryption on, what the
// server's own encryption config says, whether its datastore was
// bootstrapped, and whether k3s runs.
type encryptionFacts struct {
	Wanted       bool
	Local        k3snode.EncryptionConfigState
	Bootstrapped bool
	Active       bool
}

// encryptionWork is what the task does about secrets encryption, decided
// before anything is written: Enable asks this server's k3s to enable it
// (before the config with secrets-encryption is written), CheckLead makes
// sure the lead server enabled it first, Keys is encryption_keys' work.
type encryptionWork struct {
	Enable, CheckLead bool
	Keys              string
	Lead              string
	Warning           string
	// status is this server's, and lead's the lead's, as read before
	// (encryption_keys); secret is the cluster secret the supervisor is
	// asked with: never in a message or a result.
	status, lead k3snode.EncryptionStatus
	secret       string
}

// planEncryption reads what decideEncryption and keysWork need and decides
// with them. Its requests only read (the status), in check mode too.
func (n node) planEncryption(ctx context.Context, req *ansible.Request, a args, s state) (encryptionWork, error) {
	if a.Role != "server" && a.SecretsEncryption == "" && a.EncryptionKeys == "" {
		return encryptionWork{}, nil
	}
	if a.RotatedOn == "" {
		cfg, _ := req.Params["k3s_config"].(map[string]any)
		a.RotatedOn, _ = cfg["server"].(string)
	}
	local, err := k3snode.ReadEncryptionConfig(n.where)
	if err != nil {
		return encryptionWork{}, err
	}
	secret, err := k3snode.StoredClusterSecret(n.where)
	if err != nil {
		return encryptionWork{}, err
	}
	f := encryptionFacts{Wanted: encryptionWanted(req.Params), Local: local, Bootstrapped: secret != "", Active: s.Unit.Active}
	w, err := decideEncryption(a, f)
	w.secret = secret
	if w.Warning != "" {
		req.Warn("%s", w.Warning)
	}
	if err != nil || w.Keys == "" {
		return w, err
	}
	if !f.Bootstrapped || !f.Active {
		// follow: k3s starts now, taking the cluster's key; ensure: a new
		// cluster's k3s makes its key as it starts (in check mode, before
		// the install the task before would make).
		if w.Keys == "follow" || w.Keys == "ensure" {
			w.Keys = ""
			return w, nil
		}
		return w, fmt.Errorf("encryption_keys is %s: k3s is not running on this server, and the keys are rotated through its supervisor: start k3s first; nothing was changed", w.Keys)
	}
	base := k3snode.LocalAPI(n.where.Kubeconfig, a.APIPort)
	if w.status, err = n.encryptionStatus(ctx, base, secret); err != nil {
		return w, err
	}
	if w.Keys == "follow" {
		if w.lead, err = n.encryptionStatus(ctx, w.Lead, secret); err != nil {
			return w, err
		}
	}
	w.Keys, err = keysWork(w.Keys, w.status, w.lead, req.CheckMode)
	return w, err
}

// encryptionAfter finishes encryption_keys' work once k3s is ready: the
// rotation on this server, or, after the restart, this server on the lead's
// key. The result's encryption_key is the active key then.
func (n node) encryptionAfter(ctx context.Context, a args, w encryptionWork, res *ansible.Result) error {
	var err error
	switch w.Keys {
	case "rotate":
		w.status, err = n.rotateKeys(ctx, k3snode.LocalAPI(n.where.Kubeconfig, a.APIPort), w.secret, w.status)
	case "restart":
		w.status, err = n.waitKey(ctx, k3snode.LocalAPI(n.where.Kubeconfig, a.APIPort), w.secret, func(s k3snode.EncryptionStatus) bool {
			return s.ActiveKey == w.lead.ActiveKey
		})
	}
	if a.EncryptionKeys != "" {
		res.Set("encryption_key", w.status.ActiveKey)
	}
	return err
}

// decideEncryption refuses what would break the cluster or leak, and says
// what is left to ask k3s. A server whose encryption config has a key
// (k3s_node never removes it) and a config without secrets-encryption is
// refused whatever the options: k3s would start without an encryption
// config and could not read the Secrets written encrypted.
func decideEncryption(a args, f encryptionFacts) (encryptionWork, error) {
	w := encryptionWork{Keys: a.EncryptionKeys, Lead: a.RotatedOn}
	if a.Role != "server" {
		if a.SecretsEncryption != "" || a.EncryptionKeys != "" {
			return w, fmt.Errorf("secrets_encryption and encryption_keys are for servers, and role is %s: an agent holds no Secrets", a.Role)
		}
		return w, nil
	}
	if !f.Wanted && f.Bootstrapped && f.Local == k3snode.EncryptionOn {
		return w, errors.New("k3s_config's config does not turn secrets-encryption on, and this server's Secrets are encrypted (" + k3snode.EncryptionConfigFile(k3snode.Paths{DataDir: a.DataDir}) +
			" has a key): k3s started without it could not read them, so nothing was written. Keep secrets-encryption: true (role k8s_cluster: k8s_cluster_secrets_encryption); turning it off is k3s secrets-encrypt disable and a restart of every server, by hand")
	}
	if (a.SecretsEncryption != "" || a.EncryptionKeys != "") && !f.Wanted {
		return w, errors.New("secrets_encryption and encryption_keys need k3s_config's config to set secrets-encryption: true")
	}
	if (a.SecretsEncryption == "follow" || a.EncryptionKeys == "follow") && w.Lead == "" {
		return w, errors.New("secrets_encryption or encryption_keys is follow: rotated_on (or k3s_config.server) must name the server that leads the encryption")
	}
	if f.Local == k3snode.EncryptionDisabled {
		return w, errors.New("secrets encryption was turned off on this server (k3s secrets-encrypt disable; its keys are kept): turn it on again with k3s secrets-encrypt enable and a restart of every server; nothing was changed")
	}
	if !f.Wanted || !f.Bootstrapped || f.Local != k3snode.EncryptionNoConfig {
		return w, nil
	}
	// A running cluster without an encryption config.
	switch a.SecretsEncryption {
	case "enable":
		if !f.Active {
			return w, errors.New("secrets_encryption is enable: k3s is not running on this server, and encryption is enabled through its supervisor: start k3s first; nothing was changed")
		}
		w.Enable = true
	case "follow":
		w.CheckLead = true
	default:
		// k3s makes a key as it starts: right for one server, not for
		// several (each its own, k3s issue 7195).
		w.Warning = "secrets-encryption turned on for a running cluster without an encryption config: k3s makes a key of its own as it restarts, and the Secrets written before stay in the clear until written again; on a cluster of several servers each would make its own (k3s issue 7195): use secrets_encryption=enable on one server and follow on the others (role k8s_cluster: k8s_cluster_secrets_encryption)"
	}
	return w, nil
}

// encryptionWanted says whether the config the task writes turns secrets
// encryption on: k3s_config's config where it sets secrets-encryption, else
// the drop-ins k3s reads after it (configPath's, which k3s_config leaves
// alone).
func encryptionWanted(params map[string]any) bool {
	cfg, _ := params["k3s_config"].(map[string]any)
	inner, _ := cfg["config"].(map[string]any)
	if v, ok := inner["secrets-encryption"]; ok {
		return truthy(fmt.Sprint(v))
	}
	path, _ := cfg["path"].(string)
	if path == "" {
		path = configPath
	}
	return truthy(k3sconfig.DropInValue(path, "secrets-encryption"))
}

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// encryptionStatus asks the server at base for its secrets encryption
// status, as k3s secrets-encrypt status does. A k3s that has just started
// answers 500 until its agent has set the Node's encryption hash annotation
// (pkg/server/server.go, setNodeLabelsAndAnnotations; "missing annotation"
// in its journal) and 503 until its core controllers run: asked again each
// second within the task's wait_timeout.
func (n node) encryptionStatus(ctx context.Context, base, secret string) (k3snode.EncryptionStatus, error) {
	deadline := time.Now().Add(n.patience)
	for {
		code, said, err := n.sys.Supervisor(ctx, http.MethodGet, base, k3snode.EncryptionStatusPath, k3snode.ServerCAPath(n.where), secret, nil)
		if err == nil && code == http.StatusOK {
			return k3snode.ParseEncryptionStatus(said)
		}
		if err == nil {
			err = fmt.Errorf("k3s answered %d: %s", code, said)
		}
		if (code != http.StatusInternalServerError && code != http.StatusServiceUnavailable) || !time.Now().Before(deadline) {
			return k3snode.EncryptionStatus{}, fmt.Errorf("read the secrets encryption status of %s: %w", base, err)
		}
		select {
		case <-ctx.Done():
			return k3snode.EncryptionStatus{}, fmt.Errorf("read the secrets encryption status of %s: %w", base, err)
		case <-time.After(time.Second):
		}
	}
}

// encryptionBefore carries out what must come before the config is written:
// enable on this server, or make sure the lead enabled it.
func (n node) encryptionBefore(ctx context.Context, a args, w encryptionWork) error {
	switch {
	case w.Enable:
		base := k3snode.LocalAPI(n.where.Kubeconfig, a.APIPort)
		code, said, err := n.sys.Supervisor(ctx, http.MethodPut, base, k3snode.EncryptionConfigPath, k3snode.ServerCAPath(n.where), w.secret, k3snode.EnableEncryptionBody())
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("k3s answered %d: %s (its journal says why)", code, said)
		}
		if err != nil {
			return fmt.Errorf("enable secrets encryption on this server, as k3s secrets-encrypt enable does: %w; nothing was written", err)
		}
	case w.CheckLead:
		s, err := n.encryptionStatus(ctx, w.Lead, w.secret)
		if err != nil {
			return fmt.Errorf("secrets_encryption is follow: %w; nothing was written", err)
		}
		if s.Enable == nil {
			return fmt.Errorf("secrets_encryption is follow: %s has not enabled secrets encryption (secrets_encryption=enable there first), and k3s here would make a key of its own; nothing was written", w.Lead)
		}
	}
	return nil
}

// keysWork decides encryption_keys' work from the statuses: "rotate" on
// the lead whatever its keys (refused where k3s would refuse), "ensure"
// only where no key was ever made (the identity provider alone), "follow"
// where this server's active key is not the lead's (a restart takes it).
// It returns "rotate" or "restart", or "" for nothing. In check mode a
// server without an encryption config would rotate: the task before it in
// the same run (secrets_encryption=enable) would have enabled it.
func keysWork(keys string, local, lead k3snode.EncryptionStatus, checkMode bool) (string, error) {
	step, err := k3snode.NextEncryptionStep(local)
	if err != nil {
		return "", err
	}
	switch keys {
	case "rotate", "ensure":
		switch step {
		case k3snode.EncryptionStepEnable:
			if checkMode {
				return "rotate", nil
			}
			return "", errors.New("encryption_keys is " + keys + ": this server has no encryption config yet: enable secrets encryption first (secrets_encryption=enable, then every server restarted with secrets-encryption); nothing was changed")
		case k3snode.EncryptionStepRestart:
			if keys == "ensure" {
				return "", nil // a key is there; the others take it (follow)
			}
			return "", fmt.Errorf("encryption_keys is %s: the servers' encryption configs differ (k3s: %s): restart the others first (encryption_keys=follow), as k3s's rotate-keys would refuse; nothing was changed", keys, local.HashError)
		case k3snode.EncryptionStepRotateKeys:
			return "rotate", nil
		}
		if keys == "rotate" {
			return "rotate", nil
		}
		return "", nil
	case "follow":
		if lead.ActiveKey != "" && local.ActiveKey != lead.ActiveKey {
			return "restart", nil
		}
	}
	return "", nil
}

// rotateKeys asks this server's k3s for rotate-keys, as k3s secrets-encrypt
// rotate-keys does, and waits until k3s has written every Secret with a new
// key: its status at reencrypt_finished, the active key another than
// before. k3s answers only once the API server reloaded the config and the
// Secrets are written (handlers.encryptionRotateKeys), or fails.
func (n node) rotateKeys(ctx context.Context, base, secret string, before k3snode.EncryptionStatus) (k3snode.EncryptionStatus, error) {
	code, said, err := n.sys.Supervisor(ctx, http.MethodPut, base, k3snode.EncryptionConfigPath, k3snode.ServerCAPath(n.where), secret, k3snode.RotateKeysBody())
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("k3s answered %d: %s (its journal says why)", code, said)
	}
	if err != nil {
		return before, fmt.Errorf("rotate the secrets encryption keys on this server, as k3s secrets-encrypt rotate-keys does: %w", err)
	}
	return n.waitKey(ctx, base, secret, func(s k3snode.EncryptionStatus) bool {
		return s.Stage == k3snode.StageReencryptFinished && s.ActiveKey != "" && s.ActiveKey != before.ActiveKey
	})
}

// waitKey polls the status at base until done says so or ctx ends.
func (n node) waitKey(ctx context.Context, base, secret string, done func(k3snode.EncryptionStatus) bool) (k3snode.EncryptionStatus, error) {
	for {
		s, err := n.encryptionStatus(ctx, base, secret)
		if err == nil && done(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("stage %q, active key %q", s.Stage, s.ActiveKey)
			}
			return s, fmt.Errorf("k3s's secrets encryption did not settle within wait_timeout: %w", err)
		case <-time.After(time.Second):
		}
	}
}
