package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// CheckTimeout bounds one check of a wait, so that a request hanging on a
// dead connection is retried rather than eating the whole wait.
const CheckTimeout = 15 * time.Second

// Poll calls check every interval until it returns done, fails with an
// error that is not transient, or the timeout passes (done is then false,
// and err is nil unless the API server was still failing at the end).
// A transient error (the API server unreachable or restarting, 429, 5xx,
// an etcd leader change, a request timeout) is retried until the deadline:
// a blip does not end a wait. After each check that is not done, report
// (if not nil) can record progress; retrying is the transient error that
// check met, or nil.
func Poll(ctx context.Context, interval, timeout time.Duration, check func(ctx context.Context) (bool, error), report func(retrying error)) (bool, error) {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastTransient error
	done := false
	err := wait.PollUntilContextCancel(waitCtx, interval, true, func(ctx context.Context) (bool, error) {
		checkCtx, cancel := context.WithTimeout(ctx, CheckTimeout)
		defer cancel()
		ok, err := check(checkCtx)
		switch {
		case ok && err == nil:
			done = true
			return true, nil
		case err != nil && (ctx.Err() != nil || strings.Contains(err.Error(), "would exceed context deadline")):
			// Cut by the wait's own deadline (or refused by client-go's rate
			// limiter because it would be): time is up, not a failure.
			lastTransient = nil
			return false, context.DeadlineExceeded
		case err != nil && !IsTransient(err):
			return false, err
		}
		lastTransient = err
		if report != nil {
			report(err)
		}
		return false, nil
	})
	switch {
	case done:
		return true, nil
	case err != nil && !errors.Is(err, context.DeadlineExceeded) && waitCtx.Err() == nil:
		return false, err
	case ctx.Err() != nil:
		return false, ctx.Err()
	case lastTransient != nil:
		return false, fmt.Errorf("the API server was still failing when the wait of %s ended: %w", timeout, lastTransient)
	}
	return false, nil
}

// IsTransient tells whether err is worth retrying: the API server could
// not be reached or answered that it is busy, restarting or lost its etcd
// leader. Refusals (not found, forbidden, invalid) are not transient.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 500 {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"etcdserver: leader changed", "etcdserver: request timed out", "etcdserver: no leader", "http2: client connection lost", "TLS handshake timeout"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Reporter is a Poll report that records a retried blip with progress
// (a Request's Progress) and otherwise calls waiting (if not nil).
func Reporter(progress func(format string, args ...any), waiting func()) func(retrying error) {
	return func(retrying error) {
		switch {
		case retrying != nil:
			progress("the API server did not answer, retrying: %v", retrying)
		case waiting != nil:
			waiting()
		}
	}
}
