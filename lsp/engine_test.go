package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/server"
)

// testEngine is a real in-memory Engine: it keeps the texts it is given
// and answers hovers from them. Tests inject faults through hoverFunc.
type testEngine struct {
	mu       sync.Mutex
	texts    map[string]string
	versions map[string]int32
	settings []string
	params   lsp.InitializeParams
	notifier server.Notifier

	initErr        error
	hoverFunc      func(ctx context.Context, uri string, pos server.Position) (*server.Hover, error)
	definitionFunc func(ctx context.Context, uri string, pos server.Position) ([]server.Location, error)
	onInitialized  func(ctx context.Context, n server.Notifier)

	initialized chan struct{}
	configured  chan string // every settings delivery
	shutdowns   atomic.Int32
}

func newTestEngine() *testEngine {
	return &testEngine{
		texts: make(map[string]string), versions: make(map[string]int32),
		initialized: make(chan struct{}), configured: make(chan string, 16),
	}
}

func (e *testEngine) Initialize(_ context.Context, p lsp.InitializeParams) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.initErr != nil {
		return e.initErr
	}
	e.params = p
	e.notifier = p.Notifier
	return nil
}

func (e *testEngine) Initialized(ctx context.Context) {
	if e.onInitialized != nil {
		e.onInitialized(ctx, e.notifier)
	}
	close(e.initialized)
}

func (e *testEngine) DidChangeConfiguration(_ context.Context, settings json.RawMessage) {
	e.mu.Lock()
	e.settings = append(e.settings, string(settings))
	e.mu.Unlock()
	e.configured <- string(settings)
}

func (e *testEngine) DidOpen(_ context.Context, uri string, version int32, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.texts[uri], e.versions[uri] = text, version
}

func (e *testEngine) DidChange(_ context.Context, uri string, version int32, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.texts[uri], e.versions[uri] = text, version
}

func (e *testEngine) DidClose(_ context.Context, uri string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.texts, uri)
}

func (e *testEngine) DidSave(context.Context, string) {}

func (e *testEngine) text(uri string) (string, int32, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.texts[uri]
	return t, e.versions[uri], ok
}

// Hover describes the word at pos in the engine's copy of the text, with
// its range: enough to check positions end to end.
func (e *testEngine) Hover(ctx context.Context, uri string, pos server.Position) (*server.Hover, error) {
	if e.hoverFunc != nil {
		return e.hoverFunc(ctx, uri, pos)
	}
	return e.wordHover(uri, pos)
}

func (e *testEngine) wordHover(uri string, pos server.Position) (*server.Hover, error) {
	text, version, ok := e.text(uri)
	if !ok {
		return nil, fmt.Errorf("%s is not open", uri)
	}
	lines := strings.Split(text, "\n")
	if pos.Line >= len(lines) {
		return nil, fmt.Errorf("line %d past end", pos.Line)
	}
	line := lines[pos.Line]
	start, end := pos.Column, pos.Column
	for start > 0 && isWordByte(line[start-1]) {
		start--
	}
	for end < len(line) && isWordByte(line[end]) {
		end++
	}
	if start == end {
		return nil, nil
	}
	return &server.Hover{
		Markdown: fmt.Sprintf("`%s` v%d", line[start:end], version),
		Range:    &server.Range{Start: server.Position{Line: pos.Line, Column: start}, End: server.Position{Line: pos.Line, Column: end}},
	}, nil
}

// isWordByte treats every non-ASCII byte as part of a word, so words may
// hold any letters.
func isWordByte(c byte) bool {
	return c == '_' || c >= 0x80 || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func (e *testEngine) Definition(ctx context.Context, uri string, pos server.Position) ([]server.Location, error) {
	if e.definitionFunc != nil {
		return e.definitionFunc(ctx, uri, pos)
	}
	return nil, nil
}

func (e *testEngine) References(context.Context, string, server.Position, bool) ([]server.Location, error) {
	return nil, nil
}

func (e *testEngine) CodeActions(context.Context, string, server.Range, []string) ([]server.CodeAction, error) {
	return nil, nil
}

func (e *testEngine) Commands() []string { return nil }

func (e *testEngine) ExecuteCommand(context.Context, string, []json.RawMessage) (any, error) {
	return nil, nil
}

func (e *testEngine) Shutdown(context.Context) error {
	e.shutdowns.Add(1)
	return nil
}
