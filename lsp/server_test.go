package lsp_test

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
	"github.com/torchlsp/torchlsp/server"
)

// waitExit waits for a server to end and returns how it ended; a server
// still running when ctx ends fails the test.
func waitExit(t *testing.T, ctx context.Context, s *lsptest.Served) (int, error) {
	t.Helper()
	select {
	case <-s.Done():
		return s.Exit(ctx)
	case <-ctx.Done():
		t.Fatalf("server did not end: %v", ctx.Err())
		return 0, nil
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start runs a server for eng on one end of a pipe and a fake client on
// the other. The server is made to end when the test does.
func start(t *testing.T, eng lsp.Engine, opts lsp.Options, copts lsptest.Options) (*lsptest.Client, *lsptest.Served) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	return lsptest.Connect(t, lsptest.Wire{Engine: eng, Options: opts}, copts)
}

// startInitialized is start plus the initialize handshake.
func startInitialized(t *testing.T, ctx context.Context, eng lsp.Engine, copts lsptest.Options) (*lsptest.Client, *lsptest.Served) {
	t.Helper()
	c, s := start(t, eng, lsp.Options{Version: "test"}, copts)
	if _, err := c.Handshake(ctx); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return c, s
}

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if got := lsptest.ErrorCode(err); got != code {
		t.Fatalf("error = %v (code %d), want code %d", err, got, code)
	}
}

func TestInitializeShutdownExit(t *testing.T) {
	tests := []struct {
		name     string
		shutdown bool
		exit     bool
		wantCode int
	}{
		{"shutdown then exit", true, true, 0},
		{"exit without shutdown", false, true, 1},
		{"shutdown then connection closed", true, false, 0},
		{"connection closed without shutdown", false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			eng := newTestEngine()
			c, s := start(t, eng, lsp.Options{Version: "1.2.3"}, lsptest.Options{ClientName: "probe"})
			res, err := c.Initialize(ctx)
			if err != nil {
				t.Fatal(err)
			}
			caps := res.Capabilities
			if !bool(caps.HoverProvider) || !bool(caps.DefinitionProvider) || !caps.TextDocumentSync.OpenClose ||
				caps.TextDocumentSync.Change != 2 || caps.TextDocumentSync.Save == nil {
				t.Errorf("capabilities = %+v", caps)
			}
			if res.ServerInfo == nil || res.ServerInfo.Name != "torchlsp" || res.ServerInfo.Version != "1.2.3" {
				t.Errorf("serverInfo = %+v", res.ServerInfo)
			}
			if eng.params.ClientName != "probe" || eng.params.Notifier == nil {
				t.Errorf("engine got %+v", eng.params)
			}
			if tt.shutdown {
				if err := c.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tt.exit {
				if err := c.Exit(); err != nil {
					t.Fatal(err)
				}
			} else {
				c.Close()
			}
			code, err := waitExit(t, ctx, s)
			if code != tt.wantCode || err != nil {
				t.Errorf("Serve = %d, %v; want %d, nil", code, err, tt.wantCode)
			}
			if n := eng.shutdowns.Load(); n != 1 {
				t.Errorf("engine shut down %d times, want 1", n)
			}
		})
	}
}

func TestLifecycleErrors(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, s := start(t, eng, lsp.Options{}, lsptest.Options{})

	_, err := c.Hover(ctx, "file:///x.py", 0, 0)
	wantCode(t, err, lsptest.CodeServerNotInitialized)
	if _, err := c.Handshake(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Initialize(ctx)
	wantCode(t, err, lsptest.CodeInvalidRequest)
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Hover(ctx, "file:///x.py", 0, 0)
	wantCode(t, err, lsptest.CodeInvalidRequest)
	c.Exit()
	if code, err := waitExit(t, ctx, s); code != 0 || err != nil {
		t.Errorf("Serve = %d, %v; want 0, nil", code, err)
	}
}

func TestInitializeFailureCanBeRetried(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	eng.initErr = errors.New("no config")
	c, _ := start(t, eng, lsp.Options{}, lsptest.Options{})
	_, err := c.Initialize(ctx)
	wantCode(t, err, lsptest.CodeInternalError)
	eng.mu.Lock()
	eng.initErr = nil
	eng.mu.Unlock()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("second initialize: %v", err)
	}
}

func TestSlowRequestDoesNotBlockOthers(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	entered, release := make(chan struct{}), make(chan struct{})
	eng.hoverFunc = func(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
		if strings.HasSuffix(doc.URI(), "slow.py") {
			close(entered)
			<-release
			return &server.Hover{Markdown: "slow"}, nil
		}
		return &server.Hover{Markdown: "fast"}, nil
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	c.DidOpen("file:///slow.py", "python", "x")
	c.DidOpen("file:///fast.py", "python", "x")
	slow, err := c.StartHover("file:///slow.py", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	// The slow hover is still held; a second hover and a text change
	// must get through regardless.
	c.DidChange("file:///fast.py", 2, lsptest.Change{Text: "y"})
	h, err := c.Hover(ctx, "file:///fast.py", 0, 0)
	if err != nil || h == nil || h.Contents.Value != "fast" {
		t.Fatalf("fast hover = %+v, %v", h, err)
	}
	close(release)
	var sh lsptest.Hover
	if err := slow.Decode(ctx, &sh); err != nil || sh.Contents.Value != "slow" {
		t.Fatalf("slow hover = %+v, %v", sh, err)
	}
}

func TestCancelRequest(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	entered := make(chan struct{}, 2)
	eng.hoverFunc = func(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	c.DidOpen("untitled:Untitled-1", "python", "x")

	t.Run("numeric id", func(t *testing.T) {
		p, err := c.StartHover("untitled:Untitled-1", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		<-entered
		if err := c.Cancel(p.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, p.Decode(ctx, nil), lsptest.CodeRequestCancelled)
	})
	t.Run("string id", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":"req-a","method":"textDocument/hover","params":{"textDocument":{"uri":"untitled:Untitled-1"},"position":{"line":0,"character":0}}}`
		if err := c.WriteFrame([]byte(body)); err != nil {
			t.Fatal(err)
		}
		<-entered
		c.Notify("$/cancelRequest", map[string]string{"id": "req-a"})
		e, err := c.Await(ctx, func(e lsptest.Event) bool { return e.Response != nil && string(e.ID) == `"req-a"` })
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, e.Response.Error, lsptest.CodeRequestCancelled)
	})
	t.Run("unknown id is ignored", func(t *testing.T) {
		c.Cancel(9999)
		c.Notify("$/cancelRequest", map[string]any{"id": 1.5})
		c.Notify("$/cancelRequest", "garbage")
		eng.hoverFunc = nil
		if _, err := c.Hover(ctx, "untitled:Untitled-1", 0, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCancelWhileQueued(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	entered, release := make(chan struct{}), make(chan struct{})
	eng.hoverFunc = func(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
		close(entered)
		<-release
		return nil, nil
	}
	c, _ := start(t, eng, lsp.Options{MaxConcurrentRequests: 1}, lsptest.Options{})
	if _, err := c.Handshake(ctx); err != nil {
		t.Fatal(err)
	}
	c.DidOpen("file:///a.py", "python", "x")
	first, _ := c.StartHover("file:///a.py", 0, 0)
	<-entered
	queued, _ := c.StartHover("file:///a.py", 0, 0) // waits for the only slot
	c.Cancel(queued.ID)
	wantCode(t, queued.Decode(ctx, nil), lsptest.CodeRequestCancelled)
	close(release)
	if err := first.Decode(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestPanicIsAnsweredAndServerLives(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	eng.hoverFunc = func(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
		if pos.Column == 0 {
			panic("boom at column 0")
		}
		return &server.Hover{Markdown: "ok"}, nil
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	c.DidOpen("file:///a.py", "python", "abc")
	_, err := c.Hover(ctx, "file:///a.py", 0, 0)
	wantCode(t, err, lsptest.CodeInternalError)
	if !strings.Contains(err.Error(), "boom at column 0") {
		t.Errorf("panic reply %q lacks the panic message", err)
	}
	if h, err := c.Hover(ctx, "file:///a.py", 0, 1); err != nil || h.Contents.Value != "ok" {
		t.Fatalf("hover after panic = %+v, %v", h, err)
	}
}

func TestUntitledDocument(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	const u = "untitled:Untitled-1"
	c.DidOpen(u, "python", "import torch\n")
	h, err := c.Hover(ctx, u, 0, 9)
	if err != nil || h == nil || h.Contents.Value != "`torch` v1" || h.Contents.Kind != "markdown" {
		t.Fatalf("hover = %+v, %v", h, err)
	}
	// Not open and not a file: the client gets a clear InvalidParams.
	_, err = c.Hover(ctx, "untitled:Untitled-2", 0, 0)
	wantCode(t, err, lsptest.CodeInvalidParams)
}

func TestMalformedInput(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		wantCode int
		wantID   string
	}{
		{"body not JSON", "Content-Length: 9\r\n\r\n{not json", lsptest.CodeParseError, "null"},
		{"empty body", "Content-Length: 0\r\n\r\n", lsptest.CodeParseError, "null"},
		{"Content-Length not a number", "Content-Length: abc\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", lsptest.CodeParseError, "null"},
		{"negative Content-Length", "Content-Length: -4\r\n\r\n{}", lsptest.CodeParseError, "null"},
		{"no header at all", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"shutdown\"}\r\n\r\n", lsptest.CodeParseError, "null"},
		{"missing Content-Length", "Content-Type: x\r\n\r\n{}", lsptest.CodeParseError, "null"},
		{"header line too long", "X-Junk: " + strings.Repeat("j", 70000) + "\r\n\r\n", lsptest.CodeParseError, "null"},
		{"method not a string", frame(`{"jsonrpc":"2.0","id":7,"method":5}`), lsptest.CodeInvalidRequest, "7"},
		{"wrong jsonrpc version", frame(`{"jsonrpc":"1.0","id":"v","method":"textDocument/hover"}`), lsptest.CodeInvalidRequest, `"v"`},
		{"id of wrong type", frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"textDocument/hover"}`), lsptest.CodeInvalidRequest, "null"},
		{"wrong param types", frame(`{"jsonrpc":"2.0","id":8,"method":"textDocument/hover","params":{"position":"here"}}`), lsptest.CodeInvalidParams, "8"},
		{"params missing", frame(`{"jsonrpc":"2.0","id":9,"method":"textDocument/definition"}`), lsptest.CodeInvalidParams, "9"},
		{"id null", frame(`{"jsonrpc":"2.0","id":null,"method":"textDocument/hover","params":{}}`), lsptest.CodeInvalidRequest, "null"},
		{"past the nesting limit", frame(`{"jsonrpc":"2.0","id":11,"method":"textDocument/hover","params":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`), lsptest.CodeParseError, "11"},
		{"request cut off after its method key", frame(`{"jsonrpc":"2.0","id":12,"method":`), lsptest.CodeParseError, "12"},
		{"broken inside params", frame(`{"jsonrpc":"2.0","method":"x","id":"p","params":{"a":}}`), lsptest.CodeParseError, `"p"`},
		{"negative position", frame(`{"jsonrpc":"2.0","id":10,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///a.py"},"position":{"line":-1,"character":0}}}`), lsptest.CodeInvalidParams, "10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			eng := newTestEngine()
			c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
			c.DidOpen("file:///a.py", "python", "alpha beta")
			if err := c.WriteRaw([]byte(tt.raw)); err != nil {
				t.Fatal(err)
			}
			e, err := c.Await(ctx, func(e lsptest.Event) bool { return e.Response != nil })
			if err != nil {
				t.Fatal(err)
			}
			if string(e.ID) != tt.wantID || e.Response.Error == nil || e.Response.Error.Code != tt.wantCode {
				t.Errorf("reply id %s error %+v; want id %s code %d", e.ID, e.Response.Error, tt.wantID, tt.wantCode)
			}
			// Bad notifications are dropped quietly, and the server reads
			// on: the next well-formed request is answered.
			c.Notify("textDocument/didOpen", map[string]any{"textDocument": 12})
			h, err := c.Hover(ctx, "file:///a.py", 0, 7)
			if err != nil || h == nil || h.Contents.Value != "`beta` v1" {
				t.Fatalf("hover after bad input = %+v, %v", h, err)
			}
		})
	}
}

func frame(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

func TestUnknownMethods(t *testing.T) {
	ctx := testContext(t)
	c, _ := startInitialized(t, ctx, newTestEngine(), lsptest.Options{})
	err := c.Call(ctx, "textDocument/inlayHint", map[string]any{}, nil)
	wantCode(t, err, lsptest.CodeMethodNotFound)
	c.Notify("$/setTrace", map[string]string{"value": "verbose"})
	c.Notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []any{}})
	if err := c.Call(ctx, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Events() {
		if e.Response != nil {
			t.Errorf("unexpected reply to a notification: %+v", e.Response)
		}
	}
}

func TestPositions(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	const u = "file:///w/a.py"
	text := "def größe():\n    \"\"\"Größe 😀 数据\"\"\"\r\n    return 😀_emoji + x\n"
	c.DidOpen(u, "python", text)

	tests := []struct {
		name      string
		line, chr uint32
		want      string
		wantRange lsptest.Range
	}{
		{"non-ASCII identifier", 0, 6, "`größe` v1", lsptest.Range{Start: lsptest.Position{Line: 0, Character: 4}, End: lsptest.Position{Line: 0, Character: 9}}},
		{"after surrogate pair", 2, 13, "`😀_emoji` v1", lsptest.Range{Start: lsptest.Position{Line: 2, Character: 11}, End: lsptest.Position{Line: 2, Character: 19}}},
		{"after emoji, CRLF line", 1, 16, "`数据` v1", lsptest.Range{Start: lsptest.Position{Line: 1, Character: 16}, End: lsptest.Position{Line: 1, Character: 18}}},
		{"clamped past line end", 2, 200, "`x` v1", lsptest.Range{Start: lsptest.Position{Line: 2, Character: 22}, End: lsptest.Position{Line: 2, Character: 23}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := c.Hover(ctx, u, tt.line, tt.chr)
			if err != nil || h == nil {
				t.Fatalf("hover = %v, %v", h, err)
			}
			if h.Contents.Value != tt.want || h.Range == nil || *h.Range != tt.wantRange {
				t.Errorf("hover = %q %+v; want %q %+v", h.Contents.Value, h.Range, tt.want, tt.wantRange)
			}
		})
	}
	t.Run("line past end", func(t *testing.T) {
		_, err := c.Hover(ctx, u, 4, 0)
		wantCode(t, err, lsptest.CodeInvalidParams)
	})
}

func TestIncrementalChanges(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	const u = "file:///w/b.py"
	c.DidOpen(u, "python", "# Größe 😀\nx = 1\n")
	r := func(l1, c1, l2, c2 uint32) *lsptest.Range {
		return &lsptest.Range{Start: lsptest.Position{Line: l1, Character: c1}, End: lsptest.Position{Line: l2, Character: c2}}
	}
	c.DidChange(u, 2, lsptest.Change{Range: r(0, 10, 0, 10), Text: " ok"}) // after the emoji
	c.DidChange(u, 3, lsptest.Change{Range: r(1, 0, 1, 1), Text: "größe"}, lsptest.Change{Range: r(1, 8, 1, 9), Text: "2"})
	// A hover sent right after the changes sees them all.
	h, err := c.Hover(ctx, u, 1, 2)
	if err != nil || h == nil || h.Contents.Value != "`größe` v3" {
		t.Fatalf("hover = %+v, %v", h, err)
	}
	want := "# Größe 😀 ok\ngröße = 2\n"
	if text, version, _ := eng.text(u); text != want || version != 3 {
		t.Errorf("engine text = %q v%d, want %q v3", text, version, want)
	}
	// A change that does not fit is reported, and the text kept.
	c.DidChange(u, 4, lsptest.Change{Range: r(9, 0, 9, 0), Text: "x"})
	if _, err := c.AwaitMessage(ctx, true, "lost track"); err != nil {
		t.Fatal(err)
	}
	if text, _, _ := eng.text(u); text != want {
		t.Errorf("engine text after a bad change = %q", text)
	}
	c.DidClose(u)
	_, err = c.Hover(ctx, u, 0, 0)
	wantCode(t, err, lsptest.CodeInvalidParams)
}

func TestDefinition(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	target := t.TempDir() + "/config space.py"
	if err := writeFile(target, "# Größe 😀\nclass triton:\n    cudagraph_trees = True\n"); err != nil {
		t.Fatal(err)
	}
	eng.definitionFunc = func(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Location, error) {
		return []server.Location{
			{Path: target, Range: server.Range{Start: server.Position{Line: 0, Column: 10}, End: server.Position{Line: 0, Column: 14}}}, // the emoji
			{Path: target, Range: server.Range{Start: server.Position{Line: 2, Column: 4}, End: server.Position{Line: 2, Column: 19}}},
			{Path: "/nonexistent/x.py", Range: server.Range{Start: server.Position{Line: 3, Column: 1}}},
		}, nil
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	c.DidOpen("file:///w/c.py", "python", "x")
	locs, err := c.Definition(ctx, "file:///w/c.py", 0, 0)
	if err != nil || len(locs) != 3 {
		t.Fatalf("definition = %+v, %v", locs, err)
	}
	if want := lsptest.FileURI(target); locs[0].URI != want || !strings.Contains(locs[0].URI, "config%20space.py") {
		t.Errorf("URI = %q, want %q", locs[0].URI, want)
	}
	if got := locs[0].Range; got.Start.Character != 8 || got.End.Character != 10 {
		t.Errorf("emoji range = %+v, want characters 8-10", got)
	}
	if got := locs[1].Range; got.Start != (lsptest.Position{Line: 2, Character: 4}) || got.End.Character != 19 {
		t.Errorf("ASCII range = %+v", got)
	}
	if got := locs[2].Range.Start; got != (lsptest.Position{Line: 3, Character: 1}) {
		t.Errorf("unreadable file range = %+v, want byte columns kept", got)
	}
	eng.definitionFunc = nil
	locs, err = c.Definition(ctx, "file:///w/c.py", 0, 0)
	if err != nil || locs != nil {
		t.Errorf("empty definition = %+v, %v; want null", locs, err)
	}
}

func TestPlainTextHoverClient(t *testing.T) {
	ctx := testContext(t)
	c, _ := startInitialized(t, ctx, newTestEngine(), lsptest.Options{HoverFormats: []string{"plaintext"}})
	c.DidOpen("file:///a.py", "python", "abc")
	h, err := c.Hover(ctx, "file:///a.py", 0, 1)
	if err != nil || h.Contents.Kind != "plaintext" {
		t.Fatalf("hover = %+v, %v", h, err)
	}
}

func TestClientProcessDeathEndsServer(t *testing.T) {
	ctx := testContext(t)
	child := exec.Command("sleep", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	eng := newTestEngine()
	c, s := start(t, eng, lsp.Options{ClientPollInterval: 10 * time.Millisecond}, lsptest.Options{ProcessID: child.Process.Pid})
	if _, err := c.Handshake(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.params.ClientProcessID != child.Process.Pid {
		t.Errorf("engine saw pid %d, want %d", eng.params.ClientProcessID, child.Process.Pid)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait() // reap it: a zombie still answers kill(pid, 0)
	code, err := waitExit(t, ctx, s)
	if code != 1 || err == nil {
		t.Errorf("Serve = %d, %v; want 1 and an error", code, err)
	}
	if eng.shutdowns.Load() != 1 {
		t.Errorf("engine not shut down")
	}
	<-c.Done()
}

func TestServeContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	_, s := lsptest.Connect(t, lsptest.Wire{Engine: newTestEngine(), Context: ctx}, lsptest.Options{})
	cancel()
	if _, err := s.Exit(testContext(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve after cancel = %v, want context.Canceled", err)
	}
}

// A request converted against version N and delayed past didChange N+1
// answers for N: its position, its text and its range all come from the
// one snapshot it took on the read loop.
func TestRequestAnswersForItsVersion(t *testing.T) {
	ctx := testContext(t)
	eng := newTestEngine()
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	eng.hoverFunc = func(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
		if calls.Add(1) == 1 {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return wordHover(doc, pos)
	}
	c, _ := startInitialized(t, ctx, eng, lsptest.Options{})
	const u = "file:///w/race.py"
	c.DidOpen(u, "python", "alpha beta\n")
	held, err := c.StartHover(u, 0, 7) // inside "beta" of version 1
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	// Version 2 puts two surrogate pairs before the words: the same UTF-16
	// position now names "alpha", and byte and UTF-16 columns differ.
	c.DidChange(u, 2, lsptest.Change{Text: "😀😀 alpha beta\n"})
	// A request after the change is dispatched after the change is applied.
	h2, err := c.Hover(ctx, u, 0, 7)
	if err != nil || h2 == nil || h2.Contents.Value != "`alpha` v2" {
		t.Fatalf("hover on version 2 = %+v, %v; want alpha at v2", h2, err)
	}
	if doc := eng.Snapshot(u); doc == nil || doc.Version() != 2 {
		t.Fatalf("latest snapshot = %+v, want version 2", doc)
	}
	close(release)
	var h1 lsptest.Hover
	if err := held.Decode(ctx, &h1); err != nil {
		t.Fatal(err)
	}
	if h1.Contents.Value != "`beta` v1" {
		t.Errorf("held hover = %q, want the word of version 1", h1.Contents.Value)
	}
	want := lsptest.Range{Start: lsptest.Position{Line: 0, Character: 6}, End: lsptest.Position{Line: 0, Character: 10}}
	if h1.Range == nil || *h1.Range != want {
		t.Errorf("held hover range = %+v, want %+v (mapped with version 1's text)", h1.Range, want)
	}
}
