// Package lsptest is the one test harness for driving language servers
// over LSP, in the spirit of gopls' fake editor and integration tests. It
// has three layers:
//
//   - Client: the connection. It frames messages with the one client-side
//     codec (ReadFrame, AppendFrame), sends requests with explicit ids (so
//     they can be cancelled, and are when a Call's context ends), times
//     round trips, answers the server's requests (workspace/configuration,
//     window/workDoneProgress/create, window/showDocument, …), records
//     everything else as Events, and waits for events with a deadline
//     instead of sleeping. A raw mode writes arbitrary bytes.
//   - Editor: a Client plus its open buffers, with versions, edits and
//     positions found by needle. It returns errors; cmd/lspbench uses it.
//   - Env: an Editor connected to a server started in a Sandbox (its own
//     workspace and XDG directories): torchlsp in process (InProcess) or
//     any program (Program). Its methods fail the test; Await waits for
//     Expectations (diagnostics of a buffer's version, progress ended, a
//     message shown, a status) met by the server's messages.
package lsptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options describe the client: what it advertises at initialize and how
// it answers the server's requests.
type Options struct {
	ClientName            string // clientInfo.name; "lsptest" by default
	ProcessID             int    // processId; 0 sends null
	RootDir               string // rootUri as a file URI; "" sends null
	InitializationOptions any

	WorkDoneProgress   bool     // capabilities.window.workDoneProgress
	Configuration      bool     // capabilities.workspace.configuration
	ShowDocument       bool     // capabilities.window.showDocument.support, and the answer's success
	HoverFormats       []string // textDocument.hover.contentFormat; nil advertises markdown
	RelatedInformation bool     // textDocument.publishDiagnostics.relatedInformation
	// Notifications are torchlsp's own notifications the client announces
	// it handles (capabilities.experimental.torchlsp.notifications), such
	// as "torchlsp/status" and "torchlsp/site".
	Notifications []string

	// Settings answers workspace/configuration for section "torchlsp";
	// nil answers null. SetSettings changes it later.
	Settings json.RawMessage
	// Sections, when set, answers every workspace/configuration item
	// instead of Settings (cmd/lspbench serves any server's sections).
	Sections func(section string) any
	// MessageAction, when set, answers window/showMessageRequest with the
	// action whose title it returns ("" dismisses the message, as closing
	// it does); by default every such request is dismissed.
	MessageAction func(message string, actions []string) string
}

// Event is one message the server sent that no request of this client was
// waiting for: a notification, a request to the client, or a response
// without a known id (such as a ParseError reply with a null id).
type Event struct {
	Method   string          // "" for a response
	Params   json.RawMessage // notification or request params
	ID       json.RawMessage // the server's request id, or a response's id
	Request  bool            // a request the client answered
	Response *Response       // for responses only
}

// Response is the server's reply to a request.
type Response struct {
	ID     json.RawMessage
	Result json.RawMessage
	Error  *ResponseError
	// ReadAt is when the reply's last byte was read, before decoding.
	ReadAt time.Time
}

// ResponseError is a JSON-RPC error reply. It is an error.
type ResponseError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *ResponseError) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// JSON-RPC and LSP error codes.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternalError        = -32603
	CodeServerNotInitialized = -32002
	CodeRequestCancelled     = -32800
)

// ErrorCode returns the JSON-RPC code of err, or 0 if it is not an error
// reply.
func ErrorCode(err error) int {
	var re *ResponseError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// Client is a fake LSP client. Its methods are safe for concurrent use.
type Client struct {
	opts   Options
	in     *bufio.Reader
	out    io.Writer
	closer io.Closer

	wmu      sync.Mutex // one frame at a time on out
	nextID   atomic.Int64
	settings atomic.Pointer[json.RawMessage]

	mu      sync.Mutex // guards pending, events, changed and readErr
	pending map[string]chan *Response
	events  []Event
	changed chan struct{} // closed and replaced when events grow
	done    chan struct{} // closed when the server's side ends
	readErr error
}

// New starts a client on conn; its reader runs until conn ends.
func New(conn io.ReadWriteCloser, opts Options) *Client {
	c := &Client{
		opts: opts, in: bufio.NewReaderSize(conn, 64<<10), out: conn, closer: conn,
		pending: make(map[string]chan *Response), changed: make(chan struct{}), done: make(chan struct{}),
	}
	s := opts.Settings
	c.settings.Store(&s)
	go c.readLoop()
	return c
}

// SetSettings changes the answer to workspace/configuration.
func (c *Client) SetSettings(settings json.RawMessage) { c.settings.Store(&settings) }

// Close closes the connection.
func (c *Client) Close() error { return c.closer.Close() }

// Done is closed when the server's side of the connection ends.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, once Done is closed.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// wireMessage is any JSON-RPC message.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *ResponseError  `json:"error,omitempty"`
}

// WriteRaw writes b to the server as is: no framing is added.
func (c *Client) WriteRaw(b []byte) error {
	_, err := c.write(b)
	return err
}

// write writes b in one call and returns the moment just before, the
// start of a request's round trip.
func (c *Client) write(b []byte) (time.Time, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	sent := time.Now()
	if _, err := c.out.Write(b); err != nil {
		return sent, fmt.Errorf("writing to server: %w", err)
	}
	return sent, nil
}

// WriteFrame writes body with a correct Content-Length header.
func (c *Client) WriteFrame(body []byte) error {
	_, err := c.write(AppendFrame(make([]byte, 0, len(body)+32), body))
	return err
}

func (c *Client) send(m wireMessage) (time.Time, error) {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		return time.Time{}, fmt.Errorf("encoding %s: %w", m.Method, err)
	}
	return c.write(AppendFrame(make([]byte, 0, len(body)+32), body))
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	if raw, ok := params.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding params: %w", err)
	}
	return b, nil
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	p, err := marshalParams(params)
	if err != nil {
		return err
	}
	_, err = c.send(wireMessage{Method: method, Params: p})
	return err
}

// Pending is a request sent and not yet answered.
type Pending struct {
	ID     int64
	Sent   time.Time // just before the request was written
	method string
	key    string
	ch     chan *Response
	c      *Client
}

// Start sends a request with the next numeric id and returns without
// waiting for the reply.
func (c *Client) Start(method string, params any) (*Pending, error) {
	p, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	id := c.nextID.Add(1)
	key := strconv.FormatInt(id, 10)
	ch := make(chan *Response, 1)
	c.mu.Lock()
	c.pending[key] = ch
	c.mu.Unlock()
	sent, err := c.send(wireMessage{ID: json.RawMessage(key), Method: method, Params: p})
	if err != nil {
		c.forget(key)
		return nil, err
	}
	return &Pending{ID: id, Sent: sent, method: method, key: key, ch: ch, c: c}, nil
}

func (c *Client) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
}

// Abandon stops waiting for the reply and sends $/cancelRequest, as an
// editor does for a request it no longer needs. A reply that still comes
// is recorded as an Event.
func (p *Pending) Abandon() error {
	p.c.forget(p.key)
	return p.c.Cancel(p.ID)
}

// Wait waits for the reply. An error reply is returned as the Response's
// Error, not as err; err is for a deadline or a closed connection.
func (p *Pending) Wait(ctx context.Context) (*Response, error) {
	select {
	case r := <-p.ch:
		return r, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s #%d: %w", p.method, p.ID, ctx.Err())
	case <-p.c.done:
		// A reply read just before the end is still delivered.
		select {
		case r := <-p.ch:
			return r, nil
		default:
		}
		return nil, fmt.Errorf("waiting for %s #%d: connection ended: %w", p.method, p.ID, p.c.Err())
	}
}

// Decode waits for the reply and decodes its result into result (which
// may be nil). An error reply is returned as a *ResponseError.
func (p *Pending) Decode(ctx context.Context, result any) error {
	r, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	if r.Error != nil {
		return r.Error
	}
	if result == nil || len(r.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("decoding %s result: %w", p.method, err)
	}
	return nil
}

// Call sends a request and waits for its reply, decoding the result into
// result (which may be nil). An error reply is a *ResponseError. When ctx
// ends first, the request is cancelled.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	p, err := c.Start(method, params)
	if err != nil {
		return err
	}
	err = p.Decode(ctx, result)
	if ctx.Err() != nil && err != nil && ErrorCode(err) == 0 {
		_ = p.Abandon()
	}
	return err
}

// RoundTrip sends a request and waits for its reply. It returns the reply
// and the time from the request's write to the reply's read, which leaves
// out encoding and decoding on this side. When ctx ends first, the
// request is cancelled.
func (c *Client) RoundTrip(ctx context.Context, method string, params any) (*Response, time.Duration, error) {
	p, err := c.Start(method, params)
	if err != nil {
		return nil, 0, err
	}
	r, err := p.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			_ = p.Abandon()
		}
		return nil, 0, err
	}
	return r, r.ReadAt.Sub(p.Sent), nil
}

// Cancel sends $/cancelRequest for a numeric id, as editors do.
func (c *Client) Cancel(id int64) error {
	return c.Notify("$/cancelRequest", map[string]int64{"id": id})
}

func (c *Client) readLoop() {
	err := c.readMessages()
	c.mu.Lock()
	c.readErr = err
	close(c.done)
	c.mu.Unlock()
}

func (c *Client) readMessages() error {
	for {
		body, err := ReadFrame(c.in)
		if err != nil {
			return fmt.Errorf("reading from server: %w", err)
		}
		readAt := time.Now()
		var m wireMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return fmt.Errorf("server sent invalid JSON %q: %w", body, err)
		}
		switch {
		case m.Method == "":
			c.deliver(&Response{ID: m.ID, Result: m.Result, Error: m.Error, ReadAt: readAt})
		case len(m.ID) > 0:
			c.record(Event{Method: m.Method, Params: m.Params, ID: m.ID, Request: true})
			go c.answer(m) // never block the reader on a write
		default:
			c.record(Event{Method: m.Method, Params: m.Params})
		}
	}
}

func (c *Client) deliver(r *Response) {
	c.mu.Lock()
	ch, ok := c.pending[string(r.ID)]
	delete(c.pending, string(r.ID))
	c.mu.Unlock()
	if ok {
		ch <- r
		return
	}
	c.record(Event{ID: r.ID, Response: r})
}

func (c *Client) record(e Event) {
	c.mu.Lock()
	c.events = append(c.events, e)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// answer replies to a request from the server.
func (c *Client) answer(m wireMessage) {
	reply := wireMessage{ID: m.ID}
	switch m.Method {
	case "workspace/configuration":
		var p struct {
			Items []struct {
				Section string `json:"section"`
			} `json:"items"`
		}
		_ = json.Unmarshal(m.Params, &p)
		out := make([]any, len(p.Items))
		for i, it := range p.Items {
			switch s := *c.settings.Load(); {
			case c.opts.Sections != nil:
				out[i] = c.opts.Sections(it.Section)
			case it.Section == "torchlsp" && s != nil:
				out[i] = s
			}
		}
		reply.Result, _ = json.Marshal(out)
	case "window/workDoneProgress/create":
		if c.opts.WorkDoneProgress {
			reply.Result = json.RawMessage("null")
		} else {
			reply.Error = &ResponseError{Code: CodeMethodNotFound, Message: "progress not supported"}
		}
	case "window/showDocument":
		reply.Result, _ = json.Marshal(map[string]bool{"success": c.opts.ShowDocument})
	case "workspace/workspaceFolders":
		reply.Result = json.RawMessage("null")
		if c.opts.RootDir != "" {
			reply.Result, _ = json.Marshal(workspaceFolders(c.opts.RootDir))
		}
	case "window/showMessageRequest":
		reply.Result = json.RawMessage("null")
		if c.opts.MessageAction != nil {
			var p struct {
				Message string `json:"message"`
				Actions []struct {
					Title string `json:"title"`
				} `json:"actions"`
			}
			_ = json.Unmarshal(m.Params, &p)
			var titles []string
			for _, a := range p.Actions {
				titles = append(titles, a.Title)
			}
			if chosen := c.opts.MessageAction(p.Message, titles); chosen != "" {
				reply.Result, _ = json.Marshal(map[string]string{"title": chosen})
			}
		}
	case "client/registerCapability", "client/unregisterCapability",
		"workspace/semanticTokens/refresh", "workspace/inlayHint/refresh", "workspace/codeLens/refresh",
		"workspace/diagnostic/refresh", "workspace/inlineValue/refresh":
		reply.Result = json.RawMessage("null")
	default:
		reply.Error = &ResponseError{Code: CodeMethodNotFound, Message: "lsptest: " + m.Method}
	}
	_, _ = c.send(reply) // a closed connection ends the test elsewhere
}

// Events returns a copy of the events so far.
func (c *Client) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// Await returns the first event, past or future, for which match is true.
// It fails when ctx ends or the connection ends first.
func (c *Client) Await(ctx context.Context, match func(Event) bool) (Event, error) {
	seen := 0
	for {
		c.mu.Lock()
		for ; seen < len(c.events); seen++ {
			if match(c.events[seen]) {
				e := c.events[seen]
				c.mu.Unlock()
				return e, nil
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("awaiting event: %w", ctx.Err())
		case <-c.done:
			// Events recorded before the end are still examined once.
			c.mu.Lock()
			n := len(c.events)
			c.mu.Unlock()
			if seen == n {
				return Event{}, fmt.Errorf("awaiting event: connection ended: %v", c.Err())
			}
		}
	}
}

// Decode decodes an event's params into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Params, v); err != nil {
		return fmt.Errorf("decoding %s params: %w", e.Method, err)
	}
	return nil
}
