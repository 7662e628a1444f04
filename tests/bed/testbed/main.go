// Command testbed brings the local test bed up and down for people and for
// `make demo`:
//
//	go run ./tests/bed/testbed up [-flux] [-controllers 1] [-workers 2]
//	go run ./tests/bed/testbed status
//	go run ./tests/bed/testbed down
//
// `up` starts a background `testbed serve` process that owns the test bed
// (its processes die with it) and returns once everything is ready; `down`
// stops that process by its PID and removes what is left.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/tests/bed"
	"github.com/gitops-k3s-flux/k3s_flux/tests/bed/testhosts"
)

// status is what `up` and `status` print, and what serve writes once ready.
type status struct {
	Kubeconfig string `json:"kubeconfig"`
	APIServer  string `json:"api_server"`
	Registry   string `json:"registry"`
	ChartRef   string `json:"chart_ref"`
	Inventory  string `json:"inventory"`
	K3sInstall string `json:"k3s_install_url"`
	GitSSHURL  string `json:"git_ssh_url,omitempty"`
	KnownHosts string `json:"git_known_hosts,omitempty"`
	DeployKey  string `json:"git_deploy_key,omitempty"`
	// PlayVars is the vars file (JSON) that points playbooks/k8s.yml at this test bed.
	PlayVars string `json:"play_vars,omitempty"`
	Logs     string `json:"logs"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	var opts bed.Options
	fs.StringVar(&opts.Name, "name", testhosts.DefaultName, "test bed name (prefix of namespaces and interfaces)")
	fs.StringVar(&opts.Dir, "dir", "", "state directory (default $TMPDIR/<name>-testbed)")
	fs.StringVar(&opts.Subnet, "subnet", testhosts.DefaultSubnet, "first three octets of the test network")
	fs.IntVar(&opts.Controllers, "controllers", 1, "SSH test hosts in group k3s_controllers")
	fs.IntVar(&opts.Workers, "workers", 2, "SSH test hosts in group k3s_workers")
	fs.BoolVar(&opts.Flux, "flux", true, "run the Flux Operator, Flux controllers and the git server")
	fs.BoolVar(&opts.Python, "python", false, "leave Python on the test hosts (the benchmark's baseline needs it)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long up waits for the test bed")
	_ = fs.Parse(os.Args[2:])
	if opts.Dir == "" {
		opts.Dir = filepath.Join(os.TempDir(), opts.Name+"-testbed")
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(opts, *timeout)
	case "serve":
		err = serve(opts)
	case "down":
		err = down(opts)
	case "status":
		err = printStatus(opts.Dir)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(1)
	}
}

func statusFile(dir string) string {
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".status.json")
}
func pidFile(dir string) string { return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".pid") }
func logFile(dir string) string { return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".log") }

// up starts `testbed serve` in the background and waits for it.
func up(opts bed.Options, timeout time.Duration) error {
	if err := down(opts); err != nil {
		return fmt.Errorf("clean up an earlier test bed: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(logFile(opts.Dir), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	args := append([]string{"serve"}, os.Args[2:]...)
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start testbed serve: %w", err)
	}
	if err := os.WriteFile(pidFile(opts.Dir), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(timeout)
	for {
		if _, err := os.Stat(statusFile(opts.Dir)); err == nil {
			return printStatus(opts.Dir)
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logFile(opts.Dir))
			return fmt.Errorf("testbed serve exited (%v):\n%s", err, tail)
		case <-deadline:
			return fmt.Errorf("test bed not ready after %s; see %s", timeout, logFile(opts.Dir))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// serve runs the test bed until SIGTERM or SIGINT.
func serve(opts bed.Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	b, err := bed.Up(ctx, opts)
	cancel()
	if err != nil {
		return err
	}
	if opts.Controllers+opts.Workers == 0 {
		err = errors.Join(err, b.AddNode(context.Background(), "testbed-node"))
	}
	st := status{Kubeconfig: b.Kubeconfig, APIServer: b.APIServer, Registry: b.Registry.Addr, ChartRef: b.Registry.ChartRef(),
		Inventory: b.Hosts.Inventory, K3sInstall: b.K3s.InstallURL, Logs: b.Dir}
	if b.Flux != nil {
		st.GitSSHURL, st.KnownHosts, st.DeployKey = b.Flux.Git.SSHURL, b.Flux.Git.KnownHosts, b.Flux.Git.DeployKey
		if err == nil {
			st.PlayVars, _, err = b.WritePlayVars(filepath.Join(b.Dir, "play"))
		}
	}
	raw, _ := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = os.WriteFile(statusFile(opts.Dir), raw, 0o600)
	}
	if err != nil {
		return errors.Join(err, b.Down())
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return b.Down()
}

// down stops the serve process recorded in the pid file (checking it is
// still ours) and removes whatever is left, also of a crashed run.
func down(opts bed.Options) error {
	if raw, err := os.ReadFile(pidFile(opts.Dir)); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if pid > 0 && strings.Contains(string(cmdline), "serve") {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for i := 0; i < 300 && testhosts.ProcessAlive(pid); i++ {
				time.Sleep(100 * time.Millisecond)
			}
			if testhosts.ProcessAlive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	for _, f := range []string{pidFile(opts.Dir), statusFile(opts.Dir)} {
		_ = os.Remove(f)
	}
	name, err := testhosts.SlottedName(opts.Name)
	if err != nil {
		return err
	}
	return testhosts.Down(name, opts.Dir)
}

func printStatus(dir string) error {
	raw, err := os.ReadFile(statusFile(dir))
	if err != nil {
		return fmt.Errorf("test bed in %s is not up", dir)
	}
	fmt.Println(string(raw))
	return nil
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testbed up|down|status|serve [-name k3sf] [-flux] [-controllers 1] [-workers 2] [-subnet 10.213.0] [-dir DIR]")
	os.Exit(2)
}
