package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ErrMirrorStalled is wrapped by the error of a mirror that a deadline
// stopped: no stream header in time, no bytes for too long, no exit after
// the stream, or the whole transfer over its time. Nothing of it is kept;
// the next attempt starts over.
var ErrMirrorStalled = errors.New("mirror stalled")

type stallError struct{ msg string }

func (e *stallError) Error() string { return e.msg }
func (e *stallError) Unwrap() error { return ErrMirrorStalled }

type mirrorPhase int

const (
	phaseStart  mirrorPhase = iota // until the stream's header
	phaseStream                    // header seen, entries arriving
	phaseExit                      // stream complete, waiting for the script to exit
)

// mirrorWatch puts a deadline on each phase of a mirror. A read from the
// target's stdout moves the stream phase's deadline on; when a deadline
// passes, the watch records why, cancels the mirror's context (which kills
// the process) and closes its stdout, so that a read blocked on a pipe a
// stray child still holds returns too.
type mirrorWatch struct {
	lim    MirrorLimits
	cancel context.CancelFunc
	done   chan struct{} // closed by stop
	once   sync.Once     // closes done
	last   atomic.Int64  // unix nanoseconds of the last bytes read

	mu        sync.Mutex // guards the fields below
	phase     mirrorPhase
	phaseAt   time.Time // when the phase began
	kept      treeStats // files written so far, for messages
	announced treeStats // what the target said it would send
	closer    io.Closer // the process's stdout, closed when a deadline passes
	err       error     // why the watch fired; nil while it has not
}

func newMirrorWatch(lim MirrorLimits, cancel context.CancelFunc, files int, bytes int64) *mirrorWatch {
	now := time.Now()
	w := &mirrorWatch{lim: lim, cancel: cancel, done: make(chan struct{}), announced: treeStats{files, bytes}, phaseAt: now}
	w.last.Store(now.UnixNano())
	go w.run()
	return w
}

// tick is how often deadlines are checked: a tenth of the shortest one,
// between 10 ms and 1 s.
func (w *mirrorWatch) tick() time.Duration {
	d := min(w.lim.StartTimeout, w.lim.StallTimeout) / 10
	return min(max(d, 10*time.Millisecond), time.Second)
}

func (w *mirrorWatch) run() {
	t := time.NewTicker(w.tick())
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		w.mu.Lock()
		// The start and exit phases have a deadline from their beginning
		// (bytes trickling in do not extend them); the stream phase from
		// the last bytes.
		limit, from := w.lim.StallTimeout, w.phaseAt
		switch w.phase {
		case phaseStart:
			limit = w.lim.StartTimeout
		case phaseStream:
			if last := time.Unix(0, w.last.Load()); last.After(from) {
				from = last
			}
		}
		if time.Since(from) < limit {
			w.mu.Unlock()
			continue
		}
		w.err = &stallError{msg: w.describe(limit)}
		closer := w.closer
		w.mu.Unlock()
		w.cancel()
		if closer != nil {
			closer.Close()
		}
		return
	}
}

// describe says which deadline passed. w.mu held.
func (w *mirrorWatch) describe(limit time.Duration) string {
	switch w.phase {
	case phaseStart:
		return fmt.Sprintf("no stream header from the target within %s of starting the mirror script "+
			"(the interpreter, the login shell or the walk of the package is stuck); stopped, the next request tries again", limit)
	case phaseStream:
		return fmt.Sprintf("the stream stalled: no data for %s after the header, with %d of %d files (%s of %s) received; "+
			"stopped, the next request tries again", limit, w.kept.Files, w.announced.Files, byteSize(w.kept.Bytes), byteSize(w.announced.Bytes))
	default:
		return fmt.Sprintf("the mirror script did not exit within %s after its stream ended; stopped, the next request tries again", limit)
	}
}

// explain returns why the mirror failed: the watch's reason when it
// fired (err is then only its consequence), the overall deadline when
// that passed, else err.
func (w *mirrorWatch) explain(ctx context.Context, err error) error {
	if ferr := w.fired(); ferr != nil {
		return ferr
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return &stallError{msg: fmt.Sprintf("not done within %s, with %d of %d files received; stopped, the next request tries again",
			w.lim.Timeout, w.kept.Files, w.announced.Files)}
	}
	return err
}

func (w *mirrorWatch) fired() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *mirrorWatch) stop() { w.once.Do(func() { close(w.done) }) }

// closeOnFire registers the process's stdout to be closed when a deadline
// passes, if it can be.
func (w *mirrorWatch) closeOnFire(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		w.mu.Lock()
		w.closer = c
		w.mu.Unlock()
	}
}

func (w *mirrorWatch) enter(p mirrorPhase) {
	w.mu.Lock()
	w.phase, w.phaseAt = p, time.Now()
	w.mu.Unlock()
}

func (w *mirrorWatch) headerCame(files int, bytes int64) {
	w.mu.Lock()
	w.announced = treeStats{files, bytes}
	w.mu.Unlock()
	w.enter(phaseStream)
}

func (w *mirrorWatch) fileCame(kept treeStats) {
	w.mu.Lock()
	w.kept = kept
	w.mu.Unlock()
}

func (w *mirrorWatch) streamEnded() { w.enter(phaseExit) }

// reader returns r with every read that brings bytes moving the deadline.
func (w *mirrorWatch) reader(r io.Reader) io.Reader { return &watchedReader{r: r, w: w} }

type watchedReader struct {
	r io.Reader
	w *mirrorWatch
}

func (wr *watchedReader) Read(b []byte) (int, error) {
	n, err := wr.r.Read(b)
	if n > 0 {
		wr.w.last.Store(time.Now().UnixNano())
	}
	return n, err
}
