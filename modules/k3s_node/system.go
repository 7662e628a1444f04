package k3snodemodule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitops-k3s-flux/k3s_flux/internal/ansible"
	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
	"github.com/gitops-k3s-flux/k3s_flux/internal/k3snode"
)

// install runs the install script (downloaded, or the airgap one after the
// airgap files are in place), which writes the unit, enables and starts it.
func (n node) install(ctx context.Context, req *ansible.Request, a args) error {
	// The script only installs and enables: its own start is a blocking
	// `systemctl restart`, which never returns for an agent that cannot
	// join (TimeoutStartSec=0), and is skipped when nothing it hashes
	// changed. The module starts the unit itself, without blocking, and
	// waits with a deadline (waitActive).
	env := []string{"INSTALL_K3S_VERSION=" + a.Version, "INSTALL_K3S_EXEC=" + a.Role, "INSTALL_K3S_SKIP_START=true"}
	// The script's curl goes through the proxy, and the script copies these
	// into the unit's environment file (create_env_file).
	proxy, _ := a.proxy()
	env = append(env, proxy.Env()...)
	var script string
	if a.InstallSource == "airgap" {
		if err := n.placeAirgapFiles(a); err != nil {
			return err
		}
		script = filepath.Join(n.where.BinDir, "k3s-install.sh")
		env = append(env, "INSTALL_K3S_SKIP_DOWNLOAD=true")
	} else {
		if a.ReleaseURL != "" {
			env = append(env, "GITHUB_URL="+strings.TrimSuffix(a.ReleaseURL, "/"))
		}
		body, err := n.sys.Download(ctx, a.InstallScriptURL, proxy)
		if err != nil {
			return fmt.Errorf("download the install script: %w", err)
		}
		if a.InstallScriptSHA != "" {
			if got := sha256Hex(body); !strings.EqualFold(got, a.InstallScriptSHA) {
				return fmt.Errorf("install script %s: sha256 %s, expected %s (install_script_sha256); not run", a.InstallScriptURL, got, a.InstallScriptSHA)
			}
		}
		f, err := os.CreateTemp(req.TmpDir, "k3s-install-*.sh")
		if err != nil {
			return fmt.Errorf("write the install script: %w", err)
		}
		script = f.Name()
		defer os.Remove(script)
		_, err = f.Write(body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write the install script %s: %w", script, err)
		}
	}
	req.Progress("installing k3s %s as %s", a.Version, a.Role)
	if out, err := n.sys.Run(ctx, env, "sh", script); err != nil {
		return fmt.Errorf("install k3s %s (%s): %w: %s", a.Version, script, err, k3snode.LastLines(out, 8))
	}
	return nil
}

// placeAirgapFiles checks each file against its sha256 on the node, then
// puts it where the install script and k3s look for it.
func (n node) placeAirgapFiles(a args) error {
	type file struct{ option, src, sum, dest string }
	files := []file{
		{"airgap_binary", a.AirgapBinary, a.AirgapBinarySHA, filepath.Join(n.where.BinDir, "k3s")},
		{"airgap_script", a.AirgapScript, a.AirgapScriptSHA, filepath.Join(n.where.BinDir, "k3s-install.sh")},
	}
	if a.AirgapImages != "" {
		files = append(files, file{"airgap_images", a.AirgapImages, a.AirgapImagesSHA, filepath.Join(n.where.DataDir, "agent", "images", filepath.Base(a.AirgapImages))})
	}
	for _, f := range files {
		got, err := fileSHA256(f.src)
		if err != nil {
			return fmt.Errorf("%s: %w", f.option, err)
		}
		if !strings.EqualFold(got, f.sum) {
			return fmt.Errorf("%s %s on the node: sha256 %s, expected %s (%s_sha256); nothing installed", f.option, f.src, got, f.sum, f.option)
		}
	}
	for _, f := range files {
		mode := os.FileMode(0o755)
		if f.option == "airgap_images" {
			mode = 0o644
		}
		if err := copyFile(f.src, f.dest, mode); err != nil {
			return fmt.Errorf("%s: %w", f.option, err)
		}
	}
	return nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile replaces dest with a copy of src atomically, so a running k3s
// keeps its old binary until the new one is whole.
func copyFile(src, dest string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	defer in.Close()
	return atomicfile.Write(dest, in, mode)
}

// envChange is the unit's environment file before and after the task.
type envChange struct {
	Path, Before, After string
}

// envChange is how the task changes the unit's environment file for the
// proxy (nil when it leaves it as it is, or the proxy option is not set);
// the proxy's passwords become secrets of the task first.
func (n node) envChange(req *ansible.Request, a args, unit string) (*envChange, error) {
	proxy, set := a.proxy()
	if !set {
		return nil, nil
	}
	for _, pw := range proxy.Passwords() {
		req.AddSecret(pw)
	}
	path := k3snode.EnvFile(n.where, unit)
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	// The file's own passwords too: a diff shows the proxy it replaces.
	for _, pw := range k3snode.PasswordsIn(string(raw)) {
		req.AddSecret(pw)
	}
	after := k3snode.WithProxy(string(raw), proxy)
	if after == string(raw) {
		return nil, nil
	}
	return &envChange{Path: path, Before: string(raw), After: after}, nil
}

// writeEnv puts the proxy into the unit's environment file, 0600 as the
// install script makes it (it may hold a proxy password), after an install
// wrote it (its lines in its own order) and before k3s starts.
func (n node) writeEnv(a args) error {
	if n.env == nil {
		return nil
	}
	proxy, _ := a.proxy()
	raw, err := os.ReadFile(n.env.Path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read %s: %w", n.env.Path, err)
	}
	after := k3snode.WithProxy(string(raw), proxy)
	if after == string(raw) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(n.env.Path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(n.env.Path, strings.NewReader(after), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", n.env.Path, err)
	}
	return nil
}
