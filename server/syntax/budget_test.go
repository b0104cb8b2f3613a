package syntax

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBudgetBoundsWhatIsInFlight runs many concurrent takers of mixed
// sizes and checks that what is taken at once never passes the limit,
// that an oversized take still runs (alone), and that all finish.
func TestBudgetBoundsWhatIsInFlight(t *testing.T) {
	t.Parallel()
	const limit = 1000
	b := NewBudget(limit)
	var inFlight, peak, aloneViolations atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		size := []int{10, 300, 600, 5000}[i%4]
		wg.Add(1)
		go func() {
			defer wg.Done()
			release := b.Take(size)
			w := int64(min(size, limit))
			now := inFlight.Add(w)
			if size >= limit && now != w {
				aloneViolations.Add(1)
			}
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			// The work a share is taken for: holding it a while is the
			// load under test, so that takers overlap.
			time.Sleep(time.Millisecond)
			inFlight.Add(-w)
			release()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("takers did not finish: the budget deadlocked")
	}
	if p := peak.Load(); p > limit {
		t.Errorf("%d bytes in flight at once, limit %d", p, limit)
	}
	if v := aloneViolations.Load(); v != 0 {
		t.Errorf("an oversized take ran beside others %d times", v)
	}
	var nilBudget *Budget
	nilBudget.Take(1 << 30)() // takes nothing, never waits
}
