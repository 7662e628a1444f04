package k3snode

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Certificate is one of k3s's certificates as a node keeps it.
type Certificate struct {
	// Path is the file: a .crt under the data dir, or the admin kubeconfig.
	Path     string
	Subject  string
	NotAfter time.Time
	// CA: a certificate authority's, which k3s certificate rotate leaves
	// alone (rotate-ca replaces them).
	CA bool
}

// DaysLeft is how many whole days are left before notAfter, negative once
// it has passed.
func DaysLeft(notAfter, now time.Time) int {
	return int(math.Floor(notAfter.Sub(now).Hours() / 24))
}

// certDirs are where k3s keeps its certificates under its data dir: a
// server's (server/tls, server/tls/etcd) and every node's agent
// certificates (agent), as pkg/daemons/control/deps and pkg/agent/config
// write them.
var certDirs = []string{filepath.Join("server", "tls"), "agent"}

// Certificates reads k3s's certificates on the node: every certificate of
// every *.crt file under the data dir's server/tls and agent (a chain, leaf
// then CA, counts each) but the backups of k3s certificate rotate, and the
// admin kubeconfig's client certificate.
// What k3s has not written (an agent has no server/tls, a node without k3s
// nothing) is none. A file that does not parse is an error naming it; the
// key files are never read.
func Certificates(where Paths) ([]Certificate, error) {
	var out []Certificate
	// add keeps the certificates of raw, read from path (what names them in
	// an error).
	add := func(path, what string, raw []byte) error {
		certs, err := parsePEMCertificates(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, c := range certs {
			out = append(out, Certificate{Path: path, Subject: c.Subject.CommonName, NotAfter: c.NotAfter, CA: c.IsCA})
		}
		return nil
	}
	for _, dir := range certDirs {
		root := filepath.Join(where.DataDir, dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() && path != root && IsCertificateBackup(d.Name()) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".crt") {
				return nil
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return add(path, path, raw)
		})
		if err != nil {
			return nil, fmt.Errorf("read k3s's certificates: %w", err)
		}
	}
	if _, err := os.Stat(where.Kubeconfig); err == nil {
		creds, err := readKubeconfigCredentials(where.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("read k3s's certificates: %w", err)
		}
		if creds.cert != nil {
			if err := add(where.Kubeconfig, where.Kubeconfig+": client-certificate-data", creds.cert); err != nil {
				return nil, fmt.Errorf("read k3s's certificates: %w", err)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].NotAfter.Before(out[j].NotAfter) })
	return out, nil
}

// IsCertificateBackup says whether a directory's name is that of the copy `k3s certificate
// rotate` makes of the certificates it removes (pkg/cli/cert, backupCertificates: tls-<unix
// seconds>, under server/ on a server, under agent/ on an agent). The old certificates in it are
// no longer k3s's: an agent's, under agent/, would otherwise count as its earliest to expire.
func IsCertificateBackup(name string) bool {
	digits, ok := strings.CutPrefix(name, "tls-")
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parsePEMCertificates parses every CERTIFICATE block of a PEM file; one
// without any is an error.
func parsePEMCertificates(raw []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a certificate k3s wrote: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return out, nil
}
