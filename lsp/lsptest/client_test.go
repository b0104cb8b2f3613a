package lsptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peer is a scripted server on the other end of a pipe. It reads all
// the time, as a real server does: pipe writes wait for a reader.
type peer struct {
	conn net.Conn
	msgs chan wireMessage
}

func newPair(t *testing.T, opts Options) (*Client, *peer) {
	t.Helper()
	a, b := net.Pipe()
	c := New(a, opts)
	p := &peer{conn: b, msgs: make(chan wireMessage, 16)}
	go func() {
		r := bufio.NewReader(b)
		for {
			body, err := ReadFrame(r)
			if err != nil {
				close(p.msgs)
				return
			}
			var m wireMessage
			if json.Unmarshal(body, &m) == nil {
				p.msgs <- m
			}
		}
	}()
	t.Cleanup(func() { c.Close(); b.Close() })
	return c, p
}

func (p *peer) send(t *testing.T, body string) {
	t.Helper()
	if _, err := p.conn.Write(AppendFrame(nil, []byte(body))); err != nil {
		t.Fatal(err)
	}
}

func (p *peer) read(t *testing.T) wireMessage {
	t.Helper()
	select {
	case m, ok := <-p.msgs:
		if !ok {
			t.Fatal("client connection ended")
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no message from the client")
	}
	return wireMessage{}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCallAndEvents(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	c, p := newPair(t, Options{Configuration: true, Settings: json.RawMessage(`{"target":"gpu"}`)})

	pending, err := c.Start("textDocument/hover", map[string]int{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	req := p.read(t)
	if req.Method != "textDocument/hover" || string(req.ID) != strconv.FormatInt(pending.ID, 10) {
		t.Fatalf("server got %+v", req)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"window/showMessage","params":{"type":3,"message":"hello there"}}`)
	p.send(t, `{"jsonrpc":"2.0","id":"cfg","method":"workspace/configuration","params":{"items":[{"section":"torchlsp"},{"section":"other"}]}}`)
	answer := p.read(t)
	if string(answer.ID) != `"cfg"` || string(answer.Result) != `[{"target":"gpu"},null]` {
		t.Errorf("configuration answer = %s %s", answer.ID, answer.Result)
	}
	p.send(t, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"nope"}}`)
	if err := pending.Decode(ctx, nil); ErrorCode(err) != CodeMethodNotFound {
		t.Errorf("reply error = %v", err)
	}
	p.send(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`)

	// Await sees past events as well as future ones.
	msg, err := c.AwaitMessage(ctx, false, "hello")
	if err != nil || msg.Type != 3 {
		t.Errorf("AwaitMessage = %+v, %v", msg, err)
	}
	e, err := c.Await(ctx, func(e Event) bool { return e.Response != nil })
	if err != nil || ErrorCode(e.Response.Error) != CodeParseError {
		t.Errorf("unsolicited response = %+v, %v", e, err)
	}
	methods := []string{}
	for _, e := range c.Events() {
		methods = append(methods, e.Method)
	}
	if got := strings.Join(methods, ","); got != "window/showMessage,workspace/configuration," {
		t.Errorf("events = %q", got)
	}
}

func TestAwaitEnds(t *testing.T) {
	t.Parallel()
	c, p := newPair(t, Options{})
	short, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Await(short, func(Event) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("Await with a done context = %v", err)
	}
	pending, err := c.Start("shutdown", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.read(t)
	p.conn.Close()
	ctx := ctxFor(t)
	if _, err := c.Await(ctx, func(Event) bool { return true }); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Await after the connection ended = %v", err)
	}
	if _, err := pending.Wait(ctx); err == nil {
		t.Error("Wait after the connection ended succeeded")
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	text := "import torch\nx = \"Größe 𝛼\"; y = torch.nn\ntorch.nn\n"
	tests := []struct {
		needle     string
		n, off     int
		line, char uint32
		wantErr    bool
	}{
		{"torch", 0, 0, 0, 7, false},
		{"torch.nn", 0, 6, 1, 26, false}, // ö and ß are one unit each, 𝛼 two
		{"torch.nn", 1, 0, 2, 0, false},
		{"missing", 0, 0, 0, 0, true},
		{"torch", 5, 0, 0, 0, true},
	}
	for _, tt := range tests {
		line, char, err := Find(text, tt.needle, tt.n, tt.off)
		if (err != nil) != tt.wantErr || (!tt.wantErr && (line != tt.line || char != tt.char)) {
			t.Errorf("Find(%q, %d, %d) = %d:%d, %v; want %d:%d", tt.needle, tt.n, tt.off, line, char, err, tt.line, tt.char)
		}
	}
}

// TestServerRequests: the client answers what servers ask of editors,
// with Sections for servers whose settings are not torchlsp's.
func TestServerRequests(t *testing.T) {
	t.Parallel()
	c, p := newPair(t, Options{RootDir: "/ws", Sections: func(section string) any {
		if section == "python.analysis" {
			return map[string][]string{"extraPaths": {"/x"}}
		}
		return nil
	}})
	defer c.Close()
	tests := []struct {
		method, params, want string
	}{
		{"workspace/configuration", `{"items":[{"section":"python.analysis"},{"section":"absent"}]}`, `[{"extraPaths":["/x"]},null]`},
		{"workspace/workspaceFolders", `null`, `[{"name":"ws","uri":"file:///ws"}]`},
		{"client/registerCapability", `{"registrations":[]}`, `null`},
		{"window/workDoneProgress/create", `{"token":1}`, ""}, // progress not advertised: an error
	}
	for i, tt := range tests {
		p.send(t, `{"jsonrpc":"2.0","id":"s`+strconv.Itoa(i)+`","method":"`+tt.method+`","params":`+tt.params+`}`)
		answer := p.read(t)
		if string(answer.ID) != `"s`+strconv.Itoa(i)+`"` {
			t.Fatalf("%s: answer for id %s", tt.method, answer.ID)
		}
		if tt.want == "" {
			if answer.Error == nil || answer.Error.Code != CodeMethodNotFound {
				t.Errorf("%s: answer %s %+v, want MethodNotFound", tt.method, answer.Result, answer.Error)
			}
			continue
		}
		if string(answer.Result) != tt.want || answer.Error != nil {
			t.Errorf("%s: answer %s %+v, want %s", tt.method, answer.Result, answer.Error, tt.want)
		}
	}
}

// TestRoundTrip: a reply is timed from the request's write to its read,
// and a closed connection fails the next request instead of hanging it.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c, p := newPair(t, Options{})
	ctx := ctxFor(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := p.read(t)
		p.send(t, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"ok":true}}`)
	}()
	r, d, err := c.RoundTrip(ctx, "textDocument/hover", map[string]int{"x": 1})
	<-done
	if err != nil || string(r.Result) != `{"ok":true}` {
		t.Fatalf("RoundTrip = %+v, %v", r, err)
	}
	if d <= 0 || r.ReadAt.IsZero() {
		t.Errorf("latency %v, read at %v: want both set", d, r.ReadAt)
	}
	p.conn.Close()
	<-c.Done()
	if _, _, err := c.RoundTrip(ctx, "after", nil); err == nil {
		t.Error("a request after the server closed succeeded")
	}
}

// TestCallCancelsWhenAbandoned: a Call whose context ends sends
// $/cancelRequest for its id, as editors do.
func TestCallCancelsWhenAbandoned(t *testing.T) {
	t.Parallel()
	c, p := newPair(t, Options{})
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.Call(short, "never/answered", nil, nil) }()
	req := p.read(t)
	cancelMsg := p.read(t)
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call = %v, want the deadline", err)
	}
	if cancelMsg.Method != "$/cancelRequest" || string(cancelMsg.Params) != `{"id":`+string(req.ID)+`}` {
		t.Errorf("after the deadline the client sent %s %s, want $/cancelRequest for %s", cancelMsg.Method, cancelMsg.Params, req.ID)
	}
}
