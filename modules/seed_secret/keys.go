package seedsecret

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"filippo.io/age"
	"golang.org/x/crypto/ssh"
)

// deployKeyData returns the identity, identity.pub and known_hosts keys
// of a git deploy key Secret, as Flux's source-controller reads them.
func deployKeyData(privateKey string, knownHosts string) (map[string][]byte, error) {
	raw, err := ssh.ParseRawPrivateKey([]byte(privateKey))
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return nil, errors.New("git_deploy_key.private_key is protected by a passphrase: Flux needs a deploy key without one")
	case err != nil:
		return nil, fmt.Errorf("git_deploy_key.private_key is not an SSH private key (OpenSSH or PEM): %v", scrubKeyError(err))
	}
	signer, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		return nil, fmt.Errorf("git_deploy_key.private_key: %w", err)
	}
	return map[string][]byte{
		"identity":     []byte(strings.TrimRight(privateKey, "\n") + "\n"),
		"identity.pub": ssh.MarshalAuthorizedKey(signer.PublicKey()),
		"known_hosts":  []byte(knownHosts),
	}, nil
}

// scrubKeyError keeps a parse error's cause but never the key material.
func scrubKeyError(err error) string {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "..."
	}
	return msg
}

// ageKeyData validates an age identity file (comments allowed) and returns
// the age.agekey key of the sops-age Secret.
func ageKeyData(text string) (map[string][]byte, error) {
	ids, err := age.ParseIdentities(strings.NewReader(text))
	if err != nil {
		return nil, errors.New("age_key is not an age identity (a line AGE-SECRET-KEY-1..., as age-keygen writes): " + firstLine(err.Error()))
	}
	for _, id := range ids {
		if _, ok := id.(*age.X25519Identity); !ok {
			return nil, errors.New("age_key holds an identity that is not an X25519 age key; SOPS needs AGE-SECRET-KEY-1... keys")
		}
	}
	return map[string][]byte{"age.agekey": []byte(strings.TrimRight(text, "\n") + "\n")}, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	// age's errors quote the line they fail on: never show key material.
	if strings.Contains(line, "AGE-SECRET-KEY") {
		return "malformed secret key"
	}
	return line
}

// readSecretFile reads a file holding key material.
func readSecretFile(option, path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s %s: %w", option, path, err)
	}
	return string(raw), nil
}

// readCAFile reads PEM certificates, refusing a file that holds anything
// else (a private key given by mistake would otherwise be stored).
func readCAFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rest, n := raw, 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s holds a PEM %s block: want only CERTIFICATE blocks", path, strings.ToLower(block.Type))
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("%s: a certificate does not parse: %w", path, err)
		}
		n++
	}
	if n == 0 || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%s is not PEM certificates", path)
	}
	return raw, nil
}
