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
// cancellable, a cancel button; otherwise its title and end are shown as
// messages. The result also implements Progress. ctx is not retained: the
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
	send := w.sendMessages
	if c.capabilities().workDoneProgress {
		cctx, cancel := context.WithTimeout(c.ctx, createTimeout)
		_, err := c.conn.Call(cctx, "window/workDoneProgress/create", &tokenParams{Token: w.token}, nil)
		cancel()
		if err != nil {
			c.log.Info("progress token refused; showing messages instead", zap.String("title", w.title), zap.Error(err))
		} else {
			send = w.sendProgress
		}
	}
	send(progressValue{Kind: "begin", Title: w.title, Cancellable: w.cancellable})
	for {
		select {
		case <-w.wake:
		case <-c.ctx.Done():
			return
		}
		w.mu.Lock()
		report, ended, endMsg := w.report, w.ended, w.endMsg
		w.report = nil
		w.mu.Unlock()
		if report != nil && !ended {
			send(*report)
		}
		if ended {
			send(progressValue{Kind: "end", Message: endMsg})
			return
		}
	}
}

func (w *workDone) sendProgress(v progressValue) {
	_ = w.c.notify(w.c.ctx, "$/progress", &progressParams{Token: w.token, Value: v})
}

// sendMessages is the fallback for clients without work-done progress:
// begin and end become messages; reports go to the log.
func (w *workDone) sendMessages(v progressValue) {
	ctx := w.c.ctx
	switch v.Kind {
	case "begin":
		w.c.ShowMessage(ctx, server.MessageInfo, w.title+"…")
	case "report":
		if v.Message != "" {
			w.c.LogMessage(ctx, server.MessageLog, w.title+": "+v.Message)
		}
	case "end":
		msg := w.title + ": done"
		if v.Message != "" {
			msg = w.title + ": " + v.Message
		}
		w.c.ShowMessage(ctx, server.MessageInfo, msg)
	}
}
