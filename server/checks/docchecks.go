package checks

import (
	"context"
	"sync"
)

// docChecks keeps one diagnostics check per document at a time. A new
// version cancels the check of the one before, and its own check starts
// only once that one has stopped, so a burst of edits to a large document
// holds at most one parse and one analysis of it, never one per version.
type docChecks struct {
	mu      sync.Mutex           // guards running
	running map[string]*docCheck // the latest check of each document, by URI
}

type docCheck struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the check and every one before it have ended
}

// supersede cancels the check running for uri, if any: a newer version of
// the document arrived.
func (d *docChecks) supersede(uri string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.running[uri]; c != nil {
		c.cancel()
	}
}

// begin starts the check of uri: it cancels the one before and waits for
// it to stop, and returns the new check's context and the function to call
// when the check ends.
func (d *docChecks) begin(parent context.Context, uri string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	c := &docCheck{cancel: cancel, done: make(chan struct{})}
	d.mu.Lock()
	if d.running == nil {
		d.running = map[string]*docCheck{}
	}
	prev := d.running[uri]
	d.running[uri] = c
	d.mu.Unlock()
	if prev != nil {
		prev.cancel()
		<-prev.done // it stops promptly: a cancelled parse ends within microseconds
	}
	return ctx, func() {
		cancel()
		d.mu.Lock()
		if d.running[uri] == c {
			delete(d.running, uri)
		}
		d.mu.Unlock()
		close(c.done)
	}
}
