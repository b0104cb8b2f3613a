package lsp

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
)

// createTimeout bounds the wait for the client to accept a progress token.
const createTimeout = 30 * time.Second

// workDone sends one unit of progress. Report and End never block: a
// worker goroutine creates the token, sends begin, then the latest report
// (intermediate ones are coalesced) and end, in order. That keeps callers
// safe even on the connection's read loop, where waiting for the client's
// answer to window/workDoneProgress/create would deadlock.
type workDone struct {
	c           *Client
	token       string
	title       string
	cancellable bool
	cancelled   chan struct{}
	cancelOnce  sync.Once
	wake        chan struct{}

	mu     sync.Mutex
	report *progressValue // latest report not yet sent
	ended  bool
	endMsg string
}

// progressValue is the value of $/progress. It is declared here because
// go.lsp.dev/protocol's ProgressToken does not encode when held by value
// and its percentage cannot say 0%.
type progressValue struct {
	Kind        string  `json:"kind"`
	Title       string  `json:"title,omitempty"`
	Cancellable bool    `json:"cancellable,omitempty"`
	Message     string  `json:"message,omitempty"`
	Percentage  *uint32 `json:"percentage,omitempty"`
}

type progressParams struct {
	Token string        `json:"token"`
	Value progressValue `json:"value"`
}

type tokenParams struct {
	Token string `json:"token"`
}

// StartProgress begins work-done progress. With a client that supports it
// ($/progress), the progress shows with percentages and, when
// cancellable, a cancel button; otherwise it is a few lines in the
// client's log (progressLog). The result also implements Progress. ctx is not retained: the
// progress lives until End or the end of the connection.
func (c *Client) StartProgress(ctx context.Context, title string, cancellable bool) server.Progress {
	w := &workDone{
		c: c, token: "torchlsp-" + strconv.FormatInt(c.seq.Add(1), 10), title: title, cancellable: cancellable,
		cancelled: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return w // never sent; Report and End do nothing visible
	}
	c.progress[w.token] = w
	c.wg.Add(1)
	go w.run()
	return w
}

// close stops new progress and waits for the workers, which end with the
// connection's context.
func (c *Client) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}

// cancelProgress handles window/workDoneProgress/cancel.
func (c *Client) cancelProgress(token string) {
	c.mu.Lock()
	w := c.progress[token]
	c.mu.Unlock()
	if w != nil {
		w.cancelOnce.Do(func() { close(w.cancelled) })
	}
}

// Report updates the progress; percent is 0..100, or -1 when unknown.
func (w *workDone) Report(message string, percent int) {
	w.mu.Lock()
	if !w.ended {
		w.report = &progressValue{Kind: "report", Message: message, Percentage: percentage(percent), Cancellable: w.cancellable}
	}
	w.mu.Unlock()
	w.signal()
}

// End ends the progress; later calls do nothing.
func (w *workDone) End(message string) {
	w.mu.Lock()
	if !w.ended {
		w.ended, w.endMsg = true, message
	}
	w.mu.Unlock()
	w.signal()
}

// Cancelled is closed when the user cancels the progress.
func (w *workDone) Cancelled() <-chan struct{} { return w.cancelled }

func (w *workDone) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func percentage(p int) *uint32 {
	if p < 0 {
		return nil
	}
	v := uint32(min(p, 100))
	return &v
}

func (w *workDone) run() {
	c := w.c
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(c.progress, w.token)
		c.mu.Unlock()
	}()
	// No requests to the client before it has the initialize reply.
	select {
	case <-c.ready:
	case <-c.ctx.Done():
		return
	}
	var out progressOut = &progressLog{title: w.title, interval: progressLogInterval, log: func(typ server.MessageType, msg string) {
		c.LogMessage(c.ctx, typ, msg)
	}}
	if c.capabilities().workDoneProgress {
		cctx, cancel := context.WithTimeout(c.ctx, createTimeout)
		_, err := c.conn.Call(cctx, "window/workDoneProgress/create", &tokenParams{Token: w.token}, nil)
		cancel()
		if err != nil {
			c.log.Info("progress token refused; logging it instead", zap.String("title", w.title), zap.Error(err))
		} else {
			out = workDoneOut{w}
		}
	}
	out.begin(progressValue{Kind: "begin", Title: w.title, Cancellable: w.cancellable}, time.Now())
	var held *progressValue    // a report the output is not ready for yet
	var retry <-chan time.Time // when to offer it again
	for {
		select {
		case <-w.wake:
		case <-retry:
			retry = nil
		case <-c.ctx.Done():
			return
		}
		w.mu.Lock()
		report, ended, endMsg := w.report, w.ended, w.endMsg
		w.report = nil
		w.mu.Unlock()
		if ended {
			out.end(progressValue{Kind: "end", Message: endMsg})
			return
		}
		if report != nil {
			held = report
		}
		if held != nil && retry == nil {
			if wait := out.report(*held, time.Now()); wait > 0 {
				retry = time.After(wait)
			} else {
				held = nil
			}
		}
	}
}

// progressOut is where one unit of progress goes: $/progress, or the log
// of a client without work-done progress.
type progressOut interface {
	begin(v progressValue, now time.Time)
	// report sends v, or drops it as nothing new, and returns 0; or it
	// returns how long to wait before offering the latest report again.
	report(v progressValue, now time.Time) time.Duration
	end(v progressValue)
}

// workDoneOut sends $/progress on the unit's token.
type workDoneOut struct{ w *workDone }

func (o workDoneOut) begin(v progressValue, _ time.Time) { o.send(v) }
func (o workDoneOut) end(v progressValue)                { o.send(v) }
func (o workDoneOut) report(v progressValue, _ time.Time) time.Duration {
	o.send(v)
	return 0
}

func (o workDoneOut) send(v progressValue) {
	_ = o.w.c.notify(o.w.c.ctx, "$/progress", &progressParams{Token: o.w.token, Value: v})
}

// progressLogInterval is the least time between two report lines of one
// unit of work in the log.
const progressLogInterval = 2 * time.Second

// progressLog is the fallback for a client without work-done progress:
// each unit of work is one line in its log (window/logMessage) as it
// begins, updated by another line only when what it says changes (a new
// message, or a further quarter of the way), at most one every
// progressLogInterval with the latest report winning, and one as it ends.
// Nothing pops up (window/showMessage): start-up alone runs several units,
// and a person reads their outcome from the results and from the errors
// the engine shows itself.
type progressLog struct {
	title    string
	interval time.Duration
	log      func(typ server.MessageType, msg string)

	lastMsg string    // message of the last report line
	lastPct int       // its percentage, -1 when it had none
	lastAt  time.Time // when the last line was sent
}

func (l *progressLog) begin(_ progressValue, now time.Time) {
	l.lastPct, l.lastAt = -1, now
	l.log(server.MessageInfo, l.title+"…")
}

func (l *progressLog) report(v progressValue, now time.Time) time.Duration {
	pct := -1
	if v.Percentage != nil {
		pct = int(*v.Percentage)
	}
	if v.Message == "" || (v.Message == l.lastMsg && (pct < 0 || pct < l.lastPct+25)) {
		return 0 // nothing a reader would miss
	}
	if wait := l.interval - now.Sub(l.lastAt); wait > 0 {
		return wait
	}
	line := l.title + ": " + v.Message
	if pct >= 0 {
		line += " (" + strconv.Itoa(pct) + "%)"
	}
	l.lastMsg, l.lastPct, l.lastAt = v.Message, pct, now
	l.log(server.MessageLog, line)
	return 0
}

func (l *progressLog) end(v progressValue) {
	msg := l.title + ": done"
	if v.Message != "" {
		msg = l.title + ": " + v.Message
	}
	l.log(server.MessageInfo, msg)
}
