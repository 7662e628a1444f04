// Package turns decides the order in which a package's parallel tests run.
//
// go test pauses each test that calls t.Parallel until the serial tests are done, then resumes
// them all at once, and which of them take its -parallel slots first is the Go scheduler's pick.
// A pass whose longest test (512 s) happened to be picked last spent its last 512 s on that test
// alone, the second slot idle. A Queue hands out the turns instead: tests take a ticket in the
// order they are declared, while the serial phase still runs one test at a time, and start in
// ticket order, the ones marked first before the others, as many at once as the queue has slots.
// go test's own -parallel must then let every paused test through (Wide), or it could give its
// slots to tests whose turn has not come and leave the first waiting behind them.
package turns

import (
	"flag"
	"runtime"
	"strconv"
	"sync"
)

// Queue hands out the turns of the parallel tests of one run.
type Queue struct {
	mu      sync.Mutex
	changed *sync.Cond
	slots   int       // how many may run at once
	running int       // how many run now
	waiting []*Ticket // registered and not started: the first ones, then the others, each in order
}

// Ticket is one test's place in the queue.
type Ticket struct {
	q     *Queue
	first bool
}

// New returns a queue that runs at most slots tests at once (at least one).
func New(slots int) *Queue {
	q := &Queue{slots: max(slots, 1)}
	q.changed = sync.NewCond(&q.mu)
	return q
}

// Register gives a test its place: after every ticket registered before it, but a first one
// before every ticket that is not first.
func (q *Queue) Register(first bool) *Ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	tk := &Ticket{q: q, first: first}
	at := len(q.waiting)
	if first {
		at = 0
		for at < len(q.waiting) && q.waiting[at].first {
			at++
		}
	}
	q.waiting = append(q.waiting, nil)
	copy(q.waiting[at+1:], q.waiting[at:])
	q.waiting[at] = tk
	return tk
}

// Start blocks until it is the ticket's turn: it is the first of those waiting and a slot is free.
func (tk *Ticket) Start() {
	q := tk.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.running >= q.slots || q.waiting[0] != tk {
		q.changed.Wait()
	}
	q.waiting = q.waiting[1:]
	q.running++
	q.changed.Broadcast()
}

// Done gives the ticket's slot to the next.
func (tk *Ticket) Done() {
	q := tk.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	q.changed.Broadcast()
}

// Wide reads go test's -parallel (GOMAXPROCS when not given), which then bounds the queue, and
// raises go test's own bound above any number of tests. Call it in TestMain after flag.Parse and
// before m.Run.
func Wide() (slots int) {
	slots = runtime.GOMAXPROCS(0)
	f := flag.Lookup("test.parallel")
	if f == nil {
		return slots
	}
	if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
		slots = n
	}
	_ = f.Value.Set("1000000")
	return slots
}
