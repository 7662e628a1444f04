package bed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/pki"
)

// GitRepoPath is the test repository's path on the git server.
const GitRepoPath = "org/gitops.git"

// GitServer serves the test GitOps repository over HTTP, HTTPS and SSH on
// loopback; SSH accepts only the deploy key.
type GitServer struct {
	HTTPURL string // http://127.0.0.1:<port>, basic auth git:<password>
	SSHURL  string // ssh://git@127.0.0.1:<port>/org/gitops.git
	// HTTPSURL is the repository over HTTPS (basic auth git:Password()),
	// with a certificate from the test bed's CA (CAFile), as a Gitea behind
	// a private CA.
	HTTPSURL string
	CAFile   string
	// PublicURL is the repository over HTTP without credentials, as a
	// public repository.
	PublicURL string
	// DeployKey is the private key file the SSH server accepts, and
	// KnownHosts the server's host key line for it: what the
	// git-deploy-key Secret must hold.
	DeployKey  string
	KnownHosts string
	Branch     string

	password string
	work     string // working copy used to push
	proc     *Process
}

func startGitServer(ctx context.Context, dir string, ca *pki.CA, caFile string) (*GitServer, error) {
	bin, err := binary("gitserver", "GITSERVER_VERSION")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"repos", "hostkey", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	g := &GitServer{DeployKey: filepath.Join(dir, "deploy-key"), Branch: "main", work: filepath.Join(dir, "work")}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "flux-deploy-key", "-f", g.DeployKey).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("generate deploy key: %w: %s", err, out)
	}
	pw := make([]byte, 16)
	_, _ = rand.Read(pw)
	g.password = hex.EncodeToString(pw)
	if err := os.WriteFile(filepath.Join(dir, "password"), []byte(g.password), 0o600); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.Issue("gitserver", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return nil, fmt.Errorf("git server certificate: %w", err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	g.CAFile = caFile
	addrFile := filepath.Join(dir, "addr.json")
	g.proc, err = startProcess("gitserver", filepath.Join(dir, "logs", "gitserver.log"), nil, false, bin,
		"-root", filepath.Join(dir, "repos"), "-key-dir", filepath.Join(dir, "hostkey"),
		"-authorized-key", g.DeployKey+".pub", "-password-file", filepath.Join(dir, "password"), "-addr-file", addrFile,
		"-tls-cert", certFile, "-tls-key", keyFile, "-anonymous-http")
	if err != nil {
		return nil, err
	}
	var addrs struct {
		HTTP    string `json:"http"`
		HTTPS   string `json:"https"`
		Public  string `json:"public_http"`
		SSH     string `json:"ssh"`
		HostKey string `json:"host_key"`
	}
	if err := waitFor(ctx, "the git server", 100*time.Millisecond, func() error {
		raw, err := os.ReadFile(addrFile)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &addrs)
	}); err != nil {
		g.proc.Stop(time.Second)
		return nil, err
	}
	if f := strings.Fields(addrs.HostKey); len(f) >= 2 {
		addrs.HostKey = f[0] + " " + f[1]
	} else {
		g.proc.Stop(time.Second)
		return nil, fmt.Errorf("git server reported no host key (%q)", addrs.HostKey)
	}
	g.HTTPURL = addrs.HTTP
	g.HTTPSURL = addrs.HTTPS + "/" + GitRepoPath
	g.PublicURL = addrs.Public + "/" + GitRepoPath
	g.SSHURL = addrs.SSH + "/" + GitRepoPath
	sshURL, _ := url.Parse(addrs.SSH)
	g.KnownHosts = fmt.Sprintf("[%s]:%s %s", sshURL.Hostname(), sshURL.Port(), addrs.HostKey)
	if err := g.initRepo(); err != nil {
		g.proc.Stop(time.Second)
		return nil, err
	}
	return g, nil
}

// Password is the HTTP(S) password of user git.
func (g *GitServer) Password() string { return g.password }

// RepoFixture is the directory of the GitOps repository the git server
// serves: what a play checks with flux_repo_check.
func RepoFixture() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "gitops-repo")
}

// initRepo pushes the fixture repository (testdata/gitops-repo) as the
// first commit of the branch.
func (g *GitServer) initRepo() error {
	fixture := RepoFixture()
	if out, err := exec.Command("cp", "-r", fixture, g.work).CombinedOutput(); err != nil {
		return fmt.Errorf("copy fixture: %w: %s", err, out)
	}
	remote, _ := url.Parse(g.HTTPURL + "/" + GitRepoPath)
	remote.User = url.UserPassword("git", g.password)
	for _, args := range [][]string{
		{"init", "-q", "-b", g.Branch},
		{"remote", "add", "origin", remote.String()},
	} {
		if err := g.git(args...); err != nil {
			return err
		}
	}
	_, err := g.Commit("initial test repository", nil)
	return err
}

// Commit writes files (path relative to the repository root → content; an
// empty content removes the file), commits and pushes, and returns the
// commit SHA (Flux reports it as "<ref>@sha1:<SHA>").
func (g *GitServer) Commit(message string, files map[string]string) (string, error) {
	for path, content := range files {
		full := filepath.Join(g.work, path)
		if content == "" {
			if err := os.Remove(full); err != nil {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"add", "-A"},
		{"-c", "user.name=testbed", "-c", "user.email=testbed@example.invalid", "commit", "-q", "--allow-empty", "-m", message},
		{"push", "-q", "origin", g.Branch},
	} {
		if err := g.git(args...); err != nil {
			return "", err
		}
	}
	out, err := exec.Command("git", "-C", g.work, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// WorkTree is the working copy as last pushed: the repository a play
// checks with flux_repo_check before a push.
func (g *GitServer) WorkTree() string { return g.work }

func (g *GitServer) git(args ...string) error {
	cmd := exec.Command("git", append([]string{"-C", g.work}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.ReplaceAll(string(out), g.password, "***"))
	}
	return nil
}

func (g *GitServer) stop() {
	if g.proc != nil {
		g.proc.Stop(5 * time.Second)
	}
}
