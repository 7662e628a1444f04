package bed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Flux is the real Flux Operator, source-controller and
// kustomize-controller running as processes against the test bed's API
// server (no kubelet exists to run their Pods; the Deployments the
// operator creates are played by kwok), and the git server they reconcile.
type Flux struct {
	Git *GitServer
	// StoragePath holds the Flux manifests the operator installs from
	// (its module's config/data), so no artifact is fetched.
	StoragePath string
	procs       []*Process
	dir         string
}

// fluxNamespace is where the operator and the controllers run.
const fluxNamespace = "flux-system"

func startFlux(ctx context.Context, b *Bed, dir string) (f *Flux, err error) {
	f = &Flux{StoragePath: filepath.Join(toolDir("flux-operator", "FLUX_OPERATOR_VERSION"), "data"), dir: dir}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return f, err
	}
	if f.Git, err = startGitServer(ctx, filepath.Join(dir, "git"), b.cp.ca, b.Registry.CAFile); err != nil {
		return f, err
	}
	ports := make([]int, 6)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return f, err
		}
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	env := []string{"KUBECONFIG=" + b.Kubeconfig, "RUNTIME_NAMESPACE=" + fluxNamespace}

	operator, err := binary("flux-operator", "FLUX_OPERATOR_VERSION")
	if err != nil {
		return f, err
	}
	source, err := binary("source-controller", "FLUX_CONTROLLERS_VERSION")
	if err != nil {
		return f, err
	}
	kustomize, err := binary("kustomize-controller", "FLUX_CONTROLLERS_VERSION")
	if err != nil {
		return f, err
	}
	storage := filepath.Join(dir, "source-storage")
	if err := os.MkdirAll(storage, 0o700); err != nil {
		return f, err
	}
	// Each restarts until the CRDs it serves exist (the chart brings the
	// operator's; the FluxInstance brings Flux's), as their Pods would.
	for _, p := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flux-operator", []string{"GODEBUG=fips140=on"}, []string{operator, "--enable-leader-election=false",
			"--metrics-addr=" + addr(0), "--health-addr=" + addr(1), "--web-server-port=0", "--storage-path=" + f.StoragePath}},
		{"source-controller", nil, []string{source, "--enable-leader-election=false", "--watch-all-namespaces",
			"--metrics-addr=" + addr(2), "--health-addr=" + addr(3),
			"--storage-path=" + storage, "--storage-addr=" + addr(4), "--storage-adv-addr=" + addr(4)}},
		{"kustomize-controller", nil, []string{kustomize, "--enable-leader-election=false", "--watch-all-namespaces",
			"--metrics-addr=" + addr(5), "--health-addr=127.0.0.1:0", "--requeue-dependency=5s"}},
	} {
		// A /tmp of its own, as its Pod has: kustomize-controller removes every kustomization-*
		// directory in its temporary directory when it starts (main.go, purgeStaleTempDirs), and
		// with one /tmp for every bed, another bed's controller starting removed the directory
		// a build of this one was reading ("evalsymlink failure on /tmp/kustomization-...").
		tmp := f.TempDir(p.name)
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return f, err
		}
		procEnv := append(append(append([]string{}, env...), p.env...), "TMPDIR="+tmp)
		proc, err := startProcess(p.name, filepath.Join(logs, p.name+".log"), procEnv, true, p.args...)
		if err != nil {
			return f, err
		}
		f.procs = append(f.procs, proc)
	}
	return f, nil
}

func (f *Flux) stop() {
	for _, p := range f.procs {
		p.Stop(10 * time.Second)
	}
	if f.Git != nil {
		f.Git.stop()
	}
}

// RestartOperator stops the Flux Operator's process; its supervisor starts
// a new one, which restarts each second until the operator's CRDs exist.
// This is what uninstalling the chart does to the operator's Pod: a
// process that outlived its CRDs would keep watches that back off for up
// to a minute, and a new install would wait for them.
func (f *Flux) RestartOperator() error { return f.Restart("flux-operator") }

// Restart stops the Flux process named name; its supervisor starts a new one.
func (f *Flux) Restart(name string) error {
	for _, p := range f.procs {
		if p.Name == name {
			return p.Restart()
		}
	}
	return fmt.Errorf("the test bed runs no %s", name)
}

// TempDir is the temporary directory (TMPDIR) of the Flux process named name, its own.
func (f *Flux) TempDir(name string) string { return filepath.Join(f.dir, "tmp", name) }

// LogTails is the last n lines of each Flux process's log, for a failing
// test to show what the controllers were doing.
func (f *Flux) LogTails(n int) string {
	var b strings.Builder
	for _, p := range f.procs {
		fmt.Fprintf(&b, "== %s (%s), last %d lines:\n%s", p.Name, p.Log, n, lastLines(p.Log, n, 2000))
	}
	return b.String()
}

// Logs lists the Flux processes' log files, for a failing test to show.
func (f *Flux) Logs() []string {
	var out []string
	for _, p := range f.procs {
		out = append(out, fmt.Sprintf("%s: %s", p.Name, p.Log))
	}
	return out
}
