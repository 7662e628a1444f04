package bed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Shared is one bed that several top-level tests use in turn, for the
// state a long setup leaves (a converged HA cluster costs a minute or more
// per ansible-core pass); each test still runs alone with -run, as Get
// brings the bed up for whichever test comes first. A test that fails
// leaves the bed in a state no later test can trust, so the next Get
// starts a new one.
type Shared struct {
	opts Options

	mu     sync.Mutex
	bed    *Bed
	dir    string
	broken bool
}

// NewShared is a shared bed with these options, brought up by the first Get.
func NewShared(opts Options) *Shared {
	return &Shared{opts: opts}
}

// Get is the shared bed for test t, up and trusted; fresh asks for one no
// test has used yet. On t's failure the bed's report is logged and kept, as
// Start does, and the bed replaced at the next Get.
func (s *Shared) Get(t testing.TB, fresh bool) (b *Bed, isNew bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bed != nil && (s.broken || fresh) {
		if err := s.down(); err != nil {
			t.Fatalf("replace the shared test bed: %v", err)
		}
	}
	if s.bed == nil {
		dir, err := os.MkdirTemp("", "k3sf-"+s.opts.Name+"-")
		if err != nil {
			t.Fatalf("shared test bed: %v", err)
		}
		opts := s.opts
		opts.Dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if s.bed, err = Up(ctx, opts); err != nil {
			_ = os.RemoveAll(dir)
			t.Fatalf("shared test bed: %v", err)
		}
		s.dir, s.broken, isNew = dir, false, true
	}
	used := s.bed
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		report := fmt.Sprintf("the shared test bed %s, used by %s, failed (%s):\n%s", s.opts.Name, t.Name(), keepLogs(s.dir, s.opts.Name), used.Report(8))
		t.Log(report)
		failures.Lock()
		failures.reports = append(failures.reports, report)
		failures.Unlock()
		s.mu.Lock()
		s.broken = true
		s.mu.Unlock()
	})
	return used, isNew
}

// Close takes the shared bed down, if it is up; a later Get starts another.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down()
}

func (s *Shared) down() error {
	if s.bed == nil {
		return nil
	}
	err := s.bed.Down()
	s.bed = nil
	return errors.Join(err, os.RemoveAll(s.dir))
}
