package syntax

import (
	"context"
	"errors"
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

// A taker whose context ends while it waits gives up at once, takes
// nothing, and those behind it in line are served.
func TestBudgetTakeContextGivesUp(t *testing.T) {
	t.Parallel()
	b := NewBudget(100)
	held := b.Take(100)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.TakeContext(ctx, 100)
		gaveUp <- err
	}()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.next == 2 })
	behind := make(chan struct{})
	go func() { b.Take(50)(); close(behind) }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.next == 3 })
	cancel()
	select {
	case err := <-gaveUp:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("TakeContext = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled taker kept waiting")
	}
	held()
	select {
	case <-behind:
	case <-time.After(10 * time.Second):
		t.Fatal("the taker behind a cancelled one was never served")
	}
	b.Take(100)() // the budget is whole again
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// Takers that give up at random moments among others that wait leave the
// budget whole and never stop the line.
func TestBudgetTakeContextUnderLoad(t *testing.T) {
	t.Parallel()
	b := NewBudget(1000)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*100*time.Microsecond)
			defer cancel()
			release, err := b.TakeContext(ctx, []int{10, 400, 900, 5000}[i%4])
			if err == nil {
				time.Sleep(50 * time.Microsecond)
				release()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("takers did not finish: the budget deadlocked")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse != 0 || len(b.abandoned) != 0 || b.serving != b.next {
		t.Errorf("after all takers: inUse %d, abandoned %v, serving %d of %d", b.inUse, b.abandoned, b.serving, b.next)
	}
}
