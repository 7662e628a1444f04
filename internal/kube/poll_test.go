package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsTransient(t *testing.T) {
	gr := schema.GroupResource{Resource: "nodes"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused, wrapped", fmt.Errorf("list nodes: %w", refused), true},
		{"per-check deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"429 without Retry-After", apierrors.NewTooManyRequests("slow down", 0), true},
		{"503", apierrors.NewServiceUnavailable("restarting"), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"etcd leader changed", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "list", 1), true},
		{"not found", apierrors.NewNotFound(gr, "n1"), false},
		{"forbidden", apierrors.NewForbidden(gr, "n1", errors.New("no")), false},
		{"invalid", apierrors.NewBadRequest("spec.sync.pth: field not declared in schema"), false},
		{"a plain error", errors.New("FluxInstance is stalled"), false},
		{"nil", nil, false},
	} {
		assert.Equal(t, tc.want, IsTransient(tc.err), tc.name)
	}
}

func TestPollRetriesBlipsUntilDone(t *testing.T) {
	calls := 0
	var retried []error
	done, err := Poll(context.Background(), time.Millisecond, 5*time.Second, func(context.Context) (bool, error) {
		calls++
		if calls <= 3 {
			return false, apierrors.NewServiceUnavailable("restarting")
		}
		return calls == 5, nil
	}, func(retrying error) { retried = append(retried, retrying) })
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, 5, calls)
	require.Len(t, retried, 4, "report after each check that is not done")
	assert.Error(t, retried[0])
	assert.NoError(t, retried[3])
}

func TestPollStopsOnARefusal(t *testing.T) {
	calls := 0
	_, err := Poll(context.Background(), time.Millisecond, 5*time.Second, func(context.Context) (bool, error) {
		calls++
		return false, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("rbac"))
	}, nil)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Equal(t, 1, calls)
}

func TestPollTimeUpIsNotAnError(t *testing.T) {
	done, err := Poll(context.Background(), time.Millisecond, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		<-ctx.Done() // a request cut by the wait's own deadline
		return false, fmt.Errorf("list: %w", ctx.Err())
	}, nil)
	assert.NoError(t, err, "a check cut by the deadline means time is up")
	assert.False(t, done)
}

func TestPollRateLimiterAtTheDeadlineIsTimeUp(t *testing.T) {
	calls := 0
	done, err := Poll(context.Background(), time.Millisecond, time.Second, func(ctx context.Context) (bool, error) {
		calls++
		if calls == 1 {
			return false, nil
		}
		return false, errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	}, nil)
	assert.NoError(t, err)
	assert.False(t, done)
}

func TestPollEndingWhileTheAPIFailsSaysSo(t *testing.T) {
	done, err := Poll(context.Background(), time.Millisecond, 30*time.Millisecond, func(context.Context) (bool, error) {
		return false, apierrors.NewServiceUnavailable("etcd down")
	}, nil)
	assert.False(t, done)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "still failing when the wait of 30ms ended")
	assert.Contains(t, err.Error(), "etcd down")
}

func TestPollHonoursTheCallersContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Poll(ctx, time.Millisecond, time.Second, func(context.Context) (bool, error) { return false, nil }, nil)
	assert.ErrorIs(t, err, context.Canceled)
}
