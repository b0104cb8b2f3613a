package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/sourcegraph/conc"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// background runs the engine's work that outlives a request (mirroring,
// indexing, diagnostics) under one context that Shutdown cancels.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     conc.WaitGroup
	// parses bounds the source that background parsing (index builds,
	// the gate and op scans of every target) holds in trees at once: the
	// process's peak memory, which many cores would otherwise multiply.
	parses *syntax.Budget

	mu     sync.Mutex // guards closed, and orders Go against Wait
	closed bool
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel, parses: syntax.NewBudget(syntax.DefaultBudget)}
}

// Go runs f unless the group is shutting down (a WaitGroup must not grow
// while it is waited on); it reports whether f was started.
func (b *background) Go(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Go(f)
	return true
}

// Context ends when the engine shuts down.
func (b *background) Context() context.Context { return b.ctx }

// Done reports whether the group is shutting down.
func (b *background) Done() bool { return b.ctx.Err() != nil }

// stop cancels the work and refuses more.
func (b *background) stop() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
}

// wait waits for the work to end, until ctx does.
func (b *background) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: background work still running: %w", ctx.Err())
	}
}
