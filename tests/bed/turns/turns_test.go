package turns

import (
	"flag"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run registers one test per entry (first or not, in order), starts them all at once in the
// reverse order, as go test's scheduler may, and returns the order they got their turns in.
func run(t *testing.T, slots int, first []bool) []int {
	t.Helper()
	q := New(slots)
	tickets := make([]*Ticket, len(first))
	for i, f := range first {
		tickets[i] = q.Register(f)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := len(tickets) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tickets[i].Start()
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			tickets[i].Done()
		}()
		time.Sleep(time.Millisecond) // the later tickets wait before the earlier ones arrive
	}
	wg.Wait()
	return order
}

func TestQueueOrder(t *testing.T) {
	tests := []struct {
		name  string
		slots int
		first []bool
		want  []int
	}{
		{"declared order", 1, []bool{false, false, false}, []int{0, 1, 2}},
		{"the first before the others", 1, []bool{false, false, true}, []int{2, 0, 1}},
		{"two first, in their order", 1, []bool{false, true, false, true}, []int{1, 3, 0, 2}},
		{"a lone test", 1, []bool{true}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, run(t, tt.slots, tt.first))
		})
	}
}

func TestQueueSlots(t *testing.T) {
	for _, slots := range []int{0, 1, 2, 3} {
		t.Run(strconv.Itoa(slots), func(t *testing.T) {
			q := New(slots)
			n := max(slots, 1)
			tickets := make([]*Ticket, n+1)
			for i := range tickets {
				tickets[i] = q.Register(false)
			}
			for _, tk := range tickets[:n] {
				tk.Start() // one after the other, none done: each has a free slot
			}
			started := make(chan struct{})
			go func() {
				tickets[n].Start()
				close(started)
			}()
			select {
			case <-started:
				t.Fatalf("a ticket started with all %d slots taken", n)
			case <-time.After(20 * time.Millisecond):
			}
			tickets[0].Done()
			<-started
		})
	}
}

func TestWide(t *testing.T) {
	f := flag.Lookup("test.parallel")
	require.NotNil(t, f)
	before := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(before) })
	require.NoError(t, f.Value.Set("3"))
	assert.Equal(t, 3, Wide(), "the queue takes go test's bound")
	n, err := strconv.Atoi(f.Value.String())
	require.NoError(t, err)
	assert.Greater(t, n, 1000, "go test's own bound lets every paused test through")
}
