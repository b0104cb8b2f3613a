package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// message is one JSON-RPC message in either direction. Params and Result
// stay raw so that decoding them is the caller's cost, not the reader's.
type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *rpcError        `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// response is a reply together with the moment its last byte was read.
type response struct {
	msg    message
	readAt time.Time
}

// serverRequestHandler answers a request the server sends to the client
// (workspace/configuration and friends).
type serverRequestHandler func(method string, params json.RawMessage) (any, error)

// conn is the client side of an LSP stdio connection. A dedicated reader
// goroutine timestamps each message as soon as its body is read, so the
// latency of a call is the time from writing the request to reading the
// response, without the driver's decoding or bookkeeping.
type conn struct {
	w         io.Writer
	onRequest serverRequestHandler
	onNotify  func(method string, params json.RawMessage)

	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	readErr error
	done    chan struct{}
}

func newConn(r io.Reader, w io.Writer, onRequest serverRequestHandler, onNotify func(string, json.RawMessage)) *conn {
	c := &conn{
		w:         w,
		onRequest: onRequest,
		onNotify:  onNotify,
		pending:   make(map[int64]chan response),
		done:      make(chan struct{}),
	}
	go c.readLoop(bufio.NewReaderSize(r, 1<<16))
	return c
}

// call sends a request and waits for its response. It returns the result
// and the latency from the write of the request to the read of the reply.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, time.Duration, error) {
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, 0, err
	}
	c.nextID++
	id := c.nextID
	ch := make(chan response, 1)
	c.pending[id] = ch
	c.mu.Unlock()

	rawID := json.RawMessage(strconv.FormatInt(id, 10))
	body, err := json.Marshal(message{JSONRPC: "2.0", ID: &rawID, Method: method, Params: mustRaw(params)})
	if err != nil {
		c.forget(id)
		return nil, 0, fmt.Errorf("%s: encode: %w", method, err)
	}
	sentAt, err := c.write(body)
	if err != nil {
		c.forget(id)
		return nil, 0, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		latency := r.readAt.Sub(sentAt)
		if r.msg.Error != nil {
			return nil, latency, fmt.Errorf("%s: %w", method, r.msg.Error)
		}
		return r.msg.Result, latency, nil
	case <-c.done:
		c.forget(id)
		return nil, 0, fmt.Errorf("%s: connection closed: %w", method, c.err())
	case <-ctx.Done():
		c.forget(id)
		_ = c.notify("$/cancelRequest", map[string]int64{"id": id})
		return nil, 0, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	body, err := json.Marshal(message{JSONRPC: "2.0", Method: method, Params: mustRaw(params)})
	if err != nil {
		return fmt.Errorf("%s: encode: %w", method, err)
	}
	if _, err := c.write(body); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// write frames body and writes it in one call; it returns the moment just
// before the write, the start of a request's measured latency.
func (c *conn) write(body []byte) (time.Time, error) {
	frame := make([]byte, 0, len(body)+32)
	frame = append(frame, "Content-Length: "...)
	frame = strconv.AppendInt(frame, int64(len(body)), 10)
	frame = append(frame, "\r\n\r\n"...)
	frame = append(frame, body...)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	sentAt := time.Now()
	_, err := c.w.Write(frame)
	return sentAt, err
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// closed is closed when the server's output ends.
func (c *conn) closed() <-chan struct{} { return c.done }

func (c *conn) readLoop(r *bufio.Reader) {
	var err error
	for {
		var body []byte
		body, err = readFrame(r)
		if err != nil {
			break
		}
		readAt := time.Now()
		var msg message
		if err = json.Unmarshal(body, &msg); err != nil {
			err = fmt.Errorf("decode message: %w", err)
			break
		}
		c.dispatch(msg, readAt)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	c.mu.Lock()
	c.readErr = fmt.Errorf("reading from server: %w", err)
	c.mu.Unlock()
	close(c.done)
}

func (c *conn) dispatch(msg message, readAt time.Time) {
	switch {
	case msg.ID != nil && msg.Method == "":
		id, err := strconv.ParseInt(string(*msg.ID), 10, 64)
		if err != nil {
			return // not one of ours: this client only sends numeric ids
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ok {
			ch <- response{msg: msg, readAt: readAt}
		}
	case msg.ID != nil:
		// Answer off the read loop so a slow handler cannot delay the
		// timestamps of responses behind it.
		go c.answer(msg)
	default:
		if c.onNotify != nil {
			c.onNotify(msg.Method, msg.Params)
		}
	}
}

func (c *conn) answer(req message) {
	reply := message{JSONRPC: "2.0", ID: req.ID}
	result, err := c.onRequest(req.Method, req.Params)
	if err != nil {
		reply.Error = &rpcError{Code: -32601, Message: err.Error()}
	} else {
		reply.Result = mustRaw(result)
		if reply.Result == nil {
			reply.Result = json.RawMessage("null")
		}
	}
	body, err := json.Marshal(reply)
	if err != nil {
		return
	}
	_, _ = c.write(body)
}

// readFrame reads one Content-Length framed message body.
func readFrame(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, fmt.Errorf("malformed header %q", line)
		}
		if strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("message without Content-Length")
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("message body: %w", err)
	}
	return body, nil
}

// mustRaw encodes v, which is always a value this program built; nil stays nil.
func mustRaw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("lspbench: encoding %T: %v", v, err))
	}
	return b
}
