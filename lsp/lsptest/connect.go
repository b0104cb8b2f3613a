package lsptest

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp"
)

// Wire is torchlsp's wire serving an engine of the test's choosing, in the
// test's process, behind a net.Pipe: for the wire's own tests, whose
// engines count calls or inject faults, and for benchmarks of the wire
// alone.
type Wire struct {
	Engine  lsp.Engine
	Options lsp.Options
	// Context is Serve's; Background when nil.
	Context context.Context
}

func (w Wire) launch(Sandbox) (*running, error) {
	ctx := w.Context
	if ctx == nil {
		ctx = context.Background()
	}
	serverConn, clientConn := net.Pipe()
	exit := make(chan exitResult, 1)
	go func() {
		code, err := lsp.Serve(ctx, serverConn, w.Engine, w.Options)
		exit <- exitResult{code, err}
	}()
	return &running{conn: clientConn, exit: exit, kill: func() { _ = serverConn.Close() }}, nil
}

// Served is a server that Connect started.
type Served struct {
	r      *running
	done   chan struct{} // closed when the server ended
	result exitResult    // set before done closes
}

func newServed(r *running) *Served {
	s := &Served{r: r, done: make(chan struct{})}
	go func() {
		s.result = <-r.exit
		close(s.done)
	}()
	return s
}

// Done is closed when the server has ended.
func (s *Served) Done() <-chan struct{} { return s.done }

// Exit waits until the server ends, or ctx does, and returns its exit code
// and the error it ended with (Serve's, or the process's).
func (s *Served) Exit(ctx context.Context) (int, error) {
	select {
	case <-s.done:
		return s.result.code, s.result.err
	case <-ctx.Done():
		return -1, fmt.Errorf("the server did not end: %w", ctx.Err())
	}
}

// log is what a Program server wrote to stderr so far.
func (s *Served) log() string {
	if s.r.log == nil {
		return ""
	}
	return s.r.log()
}

// Connect starts srv in a fresh sandbox and connects a Client with opts to
// it, with no handshake. When the test ends the connection closes; a
// server still running 30 s later fails the test and is ended.
func Connect(t testing.TB, srv Server, opts Options) (*Client, *Served) {
	t.Helper()
	return connect(t, srv, NewSandbox(t), opts)
}

func connect(t testing.TB, srv Server, sb Sandbox, opts Options) (*Client, *Served) {
	t.Helper()
	r, err := srv.launch(sb)
	if err != nil {
		t.Fatalf("starting the server: %v", err)
	}
	s := newServed(r)
	c := New(r.conn, opts)
	t.Cleanup(func() {
		_ = c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.Exit(ctx); ctx.Err() != nil {
			t.Errorf("server still running 30s after its connection closed: %v", err)
		}
		r.kill()
		if t.Failed() {
			if log := s.log(); log != "" {
				t.Logf("server stderr:\n%s", log)
			}
		}
	})
	return c, s
}
