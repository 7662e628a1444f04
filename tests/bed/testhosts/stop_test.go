package testhosts

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStopAll(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		return cmd
	}
	ours, theirs := start(), start()

	p, ok := pin(ours.Process.Pid, func(int) bool { return true })
	require.True(t, ok)
	_, ok = pin(theirs.Process.Pid, func(int) bool { return false })
	assert.False(t, ok, "a process that is not ours is not pinned")

	began := time.Now()
	stopAll([]pinned{p})
	state, err := ours.Process.Wait()
	require.NoError(t, err)
	assert.Equal(t, "signal: terminated", state.String(), "SIGTERM first")
	assert.Less(t, time.Since(began), 2*time.Second)
	assert.True(t, ProcessAlive(theirs.Process.Pid), "the other left alone")
}

func TestPinnedSignalsNoOtherProcess(t *testing.T) {
	// A process pinned, then gone and reaped: its pidfd reaches nothing, whatever now has its PID.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	p, ok := pin(cmd.Process.Pid, func(int) bool { return true })
	require.True(t, ok)
	_, err := cmd.Process.Wait()
	require.NoError(t, err)
	stopAll([]pinned{p}) // returns at once: the process exited
	_, ok = pin(cmd.Process.Pid, func(int) bool { return true })
	assert.False(t, ok, "a reaped PID is not pinned")
}

func TestInNetns(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	assert.False(t, inNetns(cmd.Process.Pid, 1), "no network namespace has inode 1")
}
