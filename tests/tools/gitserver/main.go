// Command gitserver serves git repositories over HTTP and SSH on 127.0.0.1
// for the test bed, with github.com/fluxcd/pkg/gittestserver (test tool
// only). SSH takes one authorized public key; HTTP takes basic auth.
//
//	gitserver -root DIR -key-dir DIR -authorized-key FILE -password-file FILE -addr-file FILE
//
// Once listening it writes {"http": URL, "ssh": URL, "host_key": "<type> <blob>"}
// to the addr file; it stops on SIGTERM.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fluxcd/gitkit"
	"github.com/fluxcd/pkg/gittestserver"
)

func main() {
	root := flag.String("root", "", "repositories directory")
	keyDir := flag.String("key-dir", "", "directory for the SSH host key")
	authorizedKey := flag.String("authorized-key", "", "file holding the one public key SSH accepts")
	passwordFile := flag.String("password-file", "", "file holding the HTTP password of user git")
	addrFile := flag.String("addr-file", "", "where to write the listening addresses")
	tlsCert := flag.String("tls-cert", "", "with -tls-key: also serve HTTPS (same repositories, same password) with this certificate")
	tlsKey := flag.String("tls-key", "", "the certificate's key")
	anonymous := flag.Bool("anonymous-http", false, "also serve HTTP without credentials, as a public repository")
	flag.Parse()
	if err := run(*root, *keyDir, *authorizedKey, *passwordFile, *addrFile, *tlsCert, *tlsKey, *anonymous); err != nil {
		log.Fatalf("gitserver: %v", err)
	}
}

func run(root, keyDir, authorizedKey, passwordFile, addrFile string, tlsCert, tlsKey string, anonymous bool) error {
	allowed, err := os.ReadFile(authorizedKey)
	if err != nil {
		return fmt.Errorf("read authorized key: %w", err)
	}
	password, err := os.ReadFile(passwordFile)
	if err != nil {
		return fmt.Errorf("read password: %w", err)
	}
	srv := gittestserver.NewGitServer(root).KeyDir(keyDir).AutoCreate().Auth("git", strings.TrimSpace(string(password)))
	want := strings.Join(strings.Fields(string(allowed))[:2], " ")
	srv.PublicKeyLookupFunc(func(content string) (*gitkit.PublicKey, error) {
		if strings.Join(strings.Fields(content)[:2], " ") != want {
			return nil, errors.New("public key not authorized")
		}
		return &gitkit.PublicKey{Id: "deploy-key"}, nil
	})
	if err := srv.StartHTTP(); err != nil {
		return fmt.Errorf("start HTTP: %w", err)
	}
	// HTTPS, as a Gitea behind a private CA is reached: a second server on
	// the same repositories (one gittestserver serves HTTP or HTTPS).
	httpsAddr := ""
	if tlsCert != "" {
		cert, err := os.ReadFile(tlsCert)
		if err != nil {
			return fmt.Errorf("read TLS certificate: %w", err)
		}
		key, err := os.ReadFile(tlsKey)
		if err != nil {
			return fmt.Errorf("read TLS key: %w", err)
		}
		tlsSrv := gittestserver.NewGitServer(root).AutoCreate().Auth("git", strings.TrimSpace(string(password)))
		if err := tlsSrv.StartHTTPS(cert, key, nil, ""); err != nil {
			return fmt.Errorf("start HTTPS: %w", err)
		}
		defer tlsSrv.StopHTTP()
		httpsAddr = tlsSrv.HTTPAddress()
	}
	publicAddr := ""
	if anonymous {
		public := gittestserver.NewGitServer(root).AutoCreate()
		if err := public.StartHTTP(); err != nil {
			return fmt.Errorf("start anonymous HTTP: %w", err)
		}
		defer public.StopHTTP()
		publicAddr = public.HTTPAddress()
	}
	if err := srv.ListenSSH(); err != nil {
		return fmt.Errorf("listen SSH: %w", err)
	}
	pubs, _ := filepath.Glob(filepath.Join(keyDir, "*.pub"))
	if len(pubs) != 1 {
		return fmt.Errorf("want one host key in %s, found %d", keyDir, len(pubs))
	}
	hostKey, err := os.ReadFile(pubs[0])
	if err != nil {
		return fmt.Errorf("read host key: %w", err)
	}
	addrs, _ := json.Marshal(map[string]string{
		"http": srv.HTTPAddress(), "https": httpsAddr, "public_http": publicAddr, "ssh": srv.SSHAddress(), "host_key": strings.TrimSpace(string(hostKey)),
	})
	if err := os.WriteFile(addrFile+".tmp", addrs, 0o600); err != nil {
		return err
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.StartSSH() }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
		srv.StopHTTP()
		return srv.StopSSH()
	case err := <-done:
		return err
	}
}
