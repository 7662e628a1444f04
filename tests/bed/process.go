package bed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a supervised child process: its output goes to a log file, it
// dies with the test bed (SIGKILL on parent death), and it can be restarted
// when it exits, as a kubelet restarts a crashed container.
type Process struct {
	Name    string
	Log     string
	restart bool
	args    []string
	env     []string

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopped  bool
	restarts int
	exited   chan struct{} // closed when the supervisor loop ends
}

// startProcess starts a binary with args; restart keeps it running.
func startProcess(name, logPath string, env []string, restart bool, args ...string) (*Process, error) {
	p := &Process{Name: name, Log: logPath, restart: restart, args: args, env: env, exited: make(chan struct{})}
	cmd, err := p.spawn()
	if err != nil {
		return nil, err
	}
	go p.supervise(cmd)
	return p, nil
}

// errStopped: the process was stopped while it waited to be restarted.
var errStopped = errors.New("stopped")

// spawn starts the process unless Stop was called: both under the lock, so
// that Stop either sees the new process (and stops it) or prevents it.
func (p *Process) spawn() (*exec.Cmd, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, errStopped
	}
	logFile, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", p.Name, err)
	}
	defer logFile.Close()
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd = cmd
	return cmd, nil
}

func (p *Process) supervise(cmd *exec.Cmd) {
	defer close(p.exited)
	for {
		_ = cmd.Wait()
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if stopped || !p.restart {
			return
		}
		time.Sleep(time.Second)
		next, err := p.spawn()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		cmd = next
	}
}

// Restart ends the current process (SIGTERM); the supervisor starts the
// next, as a kubelet starts a new container.
func (p *Process) Restart() error {
	if !p.restart {
		return fmt.Errorf("%s is not supervised for restarts", p.Name)
	}
	pid := p.PID()
	if pid == 0 {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("restart %s: %w", p.Name, err)
	}
	return nil
}

// PID is the current process's PID.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Restarts is how many times the supervisor started the process again.
func (p *Process) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// Running tells whether the supervisor still runs the process.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to the process (and its process group), then SIGKILL
// after the grace period, and waits for it to be reaped. A process that
// crashed just before is not restarted (spawn checks stopped): without
// that, a restart during Stop left a process nobody stopped and Stop
// waiting for it forever.
func (p *Process) Stop(grace time.Duration) {
	p.mu.Lock()
	p.stopped = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// waitFor polls check until it returns nil or ctx ends; the last error is
// returned on timeout.
func waitFor(ctx context.Context, what string, interval time.Duration, check func() error) error {
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}
