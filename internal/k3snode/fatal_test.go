package k3snode

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFatalMessage(t *testing.T) {
	exit := errors.New("exit status 1")
	assert.Equal(t, "etcd database not found in /var/lib/rancher/k3s/server",
		FatalMessage("time=\"2026-12-05T04:00:00Z\" level=info msg=\"start\"\ntime=\"2026-12-05T04:00:00Z\" level=fatal msg=\"Error: etcd database not found in /var/lib/rancher/k3s/server\"\n", exit))
	assert.Equal(t, `Post "https://127.0.0.1:6443/db/snapshot": connection refused`, FatalMessage("level=error msg=\"Post \\\"https://127.0.0.1:6443/db/snapshot\\\": connection refused\"", exit))
	assert.Equal(t, "plain words", FatalMessage("\nplain words\n", exit))
	assert.Equal(t, "exit status 1", FatalMessage("", exit))
}
