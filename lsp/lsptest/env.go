package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Config describes an Env: which server, in which sandbox, with which
// workspace files and settings.
type Config struct {
	// Server is what to start; InProcess{} when nil.
	Server Server
	// Sandbox is reused when set (a restart on the same cache and
	// workspace); otherwise the Env makes a fresh one.
	Sandbox *Sandbox
	// Files are written into the workspace (names relative to it) before
	// the server starts.
	Files map[string]string
	// CopyFrom names a directory whose files are copied into the
	// workspace before Files are written.
	CopyFrom string
	// Settings are the "torchlsp" settings, sent as initializationOptions
	// and answered to workspace/configuration.
	Settings json.RawMessage
	// Client are the fake client's options. RootDir defaults to the
	// workspace; WorkDoneProgress is always on.
	Client Options
	// Timeout bounds each request and each Await; 60 s when zero.
	Timeout time.Duration
	// NoHandshake leaves initialize to the test.
	NoHandshake bool
}

// Env is a test's fake editor connected to a running server, in the
// style of gopls' integration tests: every method fails the test on an
// error, and waiting is on events from the server, with a deadline,
// never on a clock.
type Env struct {
	T       testing.TB
	Editor  *Editor
	Sandbox Sandbox
	Timeout time.Duration

	server *Served
}

// Start starts a server as cfg says, connects the fake editor and, unless
// cfg.NoHandshake, completes initialize. The server is stopped when the
// test ends.
func Start(t testing.TB, cfg Config) *Env {
	t.Helper()
	sb := NewSandbox(t)
	if cfg.Sandbox != nil {
		sb = *cfg.Sandbox
	}
	if cfg.CopyFrom != "" {
		if err := copyFiles(cfg.CopyFrom, sb.Workdir); err != nil {
			t.Fatalf("workspace: %v", err)
		}
	}
	for name, text := range cfg.Files {
		p := filepath.Join(sb.Workdir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("workspace: %v", err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatalf("workspace: %v", err)
		}
	}
	srv := cfg.Server
	if srv == nil {
		srv = InProcess{}
	}
	e := &Env{T: t, Sandbox: sb, Timeout: cfg.Timeout}
	if e.Timeout == 0 {
		e.Timeout = 60 * time.Second
	}
	opts := cfg.Client
	if opts.RootDir == "" {
		opts.RootDir = sb.Workdir
	}
	if cfg.Settings != nil {
		opts.InitializationOptions = cfg.Settings
		opts.Settings = cfg.Settings
		opts.Configuration = true
	}
	opts.WorkDoneProgress = true
	c, served := connect(t, srv, sb, opts)
	e.server = served
	e.Editor = NewEditor(c, opts.RootDir)
	if !cfg.NoHandshake {
		if _, err := e.Editor.Handshake(e.Ctx()); err != nil {
			t.Fatalf("initialize: %v", err)
		}
	}
	return e
}

// Ctx returns a context with the Env's timeout, cancelled when the test
// ends.
func (e *Env) Ctx() context.Context { return e.CtxFor(e.Timeout) }

// CtxFor returns a context with timeout d, cancelled when the test ends.
func (e *Env) CtxFor(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	e.T.Cleanup(cancel)
	return ctx
}

// call returns a context for one request or wait, to be cancelled after
// it (a test may make thousands).
func (e *Env) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.Timeout)
}

// Client is the fake editor's connection, for raw requests.
func (e *Env) Client() *Client { return e.Editor.Client }

// Path returns the absolute path of a workspace file.
func (e *Env) Path(name string) string { return filepath.Join(e.Sandbox.Workdir, name) }

// OpenFile opens a workspace file and returns its URI.
func (e *Env) OpenFile(name string) string {
	e.T.Helper()
	uri, err := e.Editor.OpenFile(name)
	if err != nil {
		e.T.Fatal(err)
	}
	return uri
}

// OpenBuffer opens a buffer with any URI (untitled:…).
func (e *Env) OpenBuffer(uri, text string) {
	e.T.Helper()
	if err := e.Editor.OpenBuffer(uri, text); err != nil {
		e.T.Fatal(err)
	}
}

// EditBuffer replaces a buffer's text as its next version.
func (e *Env) EditBuffer(uri, text string) int32 {
	e.T.Helper()
	v, err := e.Editor.EditBuffer(uri, text)
	if err != nil {
		e.T.Fatal(err)
	}
	return v
}

// ApplyEdits applies edits to a buffer as its next version.
func (e *Env) ApplyEdits(uri string, edits []TextEdit) int32 {
	e.T.Helper()
	v, err := e.Editor.ApplyEdits(uri, edits)
	if err != nil {
		e.T.Fatal(err)
	}
	return v
}

// Text returns an open buffer's text.
func (e *Env) Text(uri string) string {
	e.T.Helper()
	text, ok := e.Editor.Text(uri)
	if !ok {
		e.T.Fatalf("%s is not open", uri)
	}
	return text
}

// At is the position of byte off within the first occurrence of needle
// in an open buffer.
func (e *Env) At(uri, needle string, off int) Position { return e.AtN(uri, needle, 0, off) }

// AtN is At for the n-th (0-based) occurrence.
func (e *Env) AtN(uri, needle string, n, off int) Position {
	e.T.Helper()
	p, err := e.Editor.Pos(uri, needle, n, off)
	if err != nil {
		e.T.Fatal(err)
	}
	return p
}

// Hover asks for the hover at pos; nil when the server has nothing.
func (e *Env) Hover(uri string, pos Position) *Hover {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	h, err := e.Editor.Hover(ctx, uri, pos.Line, pos.Character)
	if err != nil {
		e.T.Fatalf("hover at %s:%d:%d: %v", uri, pos.Line, pos.Character, err)
	}
	return h
}

// Definition asks for the definitions at pos.
func (e *Env) Definition(uri string, pos Position) []Location {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	locs, err := e.Editor.Definition(ctx, uri, pos.Line, pos.Character)
	if err != nil {
		e.T.Fatalf("definition at %s:%d:%d: %v", uri, pos.Line, pos.Character, err)
	}
	return locs
}

// References asks for the references at pos, with the declaration.
func (e *Env) References(uri string, pos Position) []Location {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	locs, err := e.Editor.References(ctx, uri, pos, true)
	if err != nil {
		e.T.Fatalf("references at %s:%d:%d: %v", uri, pos.Line, pos.Character, err)
	}
	return locs
}

// CodeActions asks for the code actions at rng.
func (e *Env) CodeActions(uri string, rng Range) []CodeAction {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	actions, err := e.Editor.CodeActions(ctx, uri, rng)
	if err != nil {
		e.T.Fatalf("code actions at %s %+v: %v", uri, rng, err)
	}
	return actions
}

// Await waits until every expectation is met by the server's messages,
// past or future, and returns the event that met each. It fails the test
// when the Env's timeout passes or the connection ends first.
func (e *Env) Await(exps ...Expectation) []Event {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	events, err := e.Editor.AwaitAll(ctx, exps...)
	if err != nil {
		e.T.Fatalf("%v\n%s", err, e.summary())
	}
	return events
}

// AwaitDiagnostics waits for diagnostics of the buffer's current version
// for which ok is true (any, when ok is nil), and returns them.
func (e *Env) AwaitDiagnostics(uri string, ok func(Diagnostics) bool) Diagnostics {
	e.T.Helper()
	var d Diagnostics
	ev := e.Await(DiagnosticsAt(uri, e.Editor.Version(uri), ok))
	if err := ev[0].Decode(&d); err != nil {
		e.T.Fatal(err)
	}
	return d
}

// AwaitMessage waits for a window/showMessage containing substr.
func (e *Env) AwaitMessage(substr string) Message {
	e.T.Helper()
	var m Message
	ev := e.Await(ShownMessage(substr))
	if err := ev[0].Decode(&m); err != nil {
		e.T.Fatal(err)
	}
	return m
}

// AwaitProgressEnd waits for the end of a work-done progress titled
// title and returns it.
func (e *Env) AwaitProgressEnd(title string) Progress {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	p, err := e.Editor.AwaitProgressEnd(ctx, title)
	if err != nil {
		e.T.Fatalf("%v\n%s", err, e.summary())
	}
	return p
}

// Shutdown ends the session the polite way (shutdown, exit) and checks
// that the server exits with 0.
func (e *Env) Shutdown() {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	if err := e.Editor.Shutdown(ctx); err != nil {
		e.T.Fatalf("shutdown: %v", err)
	}
	if err := e.Editor.Exit(); err != nil {
		e.T.Fatalf("exit: %v", err)
	}
	if code := e.ExitCode(); code != 0 {
		e.T.Errorf("exit code after shutdown = %d, want 0", code)
	}
}

// ExitCode waits, bounded by the Env's timeout, for the server to end and
// returns its exit code.
func (e *Env) ExitCode() int {
	e.T.Helper()
	ctx, cancel := e.call()
	defer cancel()
	code, err := e.server.Exit(ctx)
	if err != nil {
		e.T.Fatalf("server: %v", err)
	}
	return code
}

// ServerLog is what a Program server wrote to stderr so far.
func (e *Env) ServerLog() string { return e.server.log() }

// summary describes what the server sent, for a failed wait.
func (e *Env) summary() string {
	counts := map[string]int{}
	last := map[string]string{}
	for _, ev := range e.Editor.Events() {
		m := ev.Method
		if m == "" {
			m = "(response)"
		}
		counts[m]++
		if m == "textDocument/publishDiagnostics" || m == "window/showMessage" {
			last[m] = string(ev.Params)
		}
	}
	var b strings.Builder
	b.WriteString("events so far:")
	for m, n := range counts {
		fmt.Fprintf(&b, " %s×%d", m, n)
	}
	for m, p := range last {
		fmt.Fprintf(&b, "\nlast %s: %.2000s", m, p)
	}
	return b.String()
}

// copyFiles copies the regular files of src (not its subdirectories) into
// dst.
func copyFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	for _, ent := range entries {
		if !ent.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, ent.Name()), data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", ent.Name(), err)
		}
	}
	return nil
}
