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

// A take larger than what is free is served before takers that came after
// it: small parses arriving back to back (an index build) must not keep a
// large document's check waiting for as long as they keep coming.
func TestBudgetLargeTakeIsNotStarved(t *testing.T) {
	t.Parallel()
	b := NewBudget(DefaultBudget)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				release := b.Take(10 << 10)
				time.Sleep(200 * time.Microsecond)
				release()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(10 * time.Millisecond)
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		b.Take(2 << 20)()
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("the large take waited %v", d)
	case <-time.After(10 * time.Second):
		t.Fatal("a large take waited 10s behind a stream of small ones")
	}
}
