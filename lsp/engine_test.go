package lsp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// testEngine is a real in-memory Engine: it keeps the texts it is given
// in the engine's document store and answers hovers from the snapshot a
// request carries. Tests inject faults through hoverFunc.
type testEngine struct {
	noCommands
	docs     *source.Store
	mu       sync.Mutex // guards settings, params and notifier
	settings []string
	params   lsp.InitializeParams
	notifier server.Notifier

	initErr        error
	hoverFunc      func(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error)
	definitionFunc func(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Location, error)
	codeActions    []server.CodeAction // what CodeActions answers, whatever the kinds asked for
	onInitialized  func(ctx context.Context, n server.Notifier)

	initialized chan struct{}
	configured  chan string // every settings delivery
	shutdowns   atomic.Int32
}

func newTestEngine() *testEngine {
	return &testEngine{
		docs:        source.NewStore(0, nil),
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

func (e *testEngine) DidOpen(_ context.Context, uri, language string, version int32, text string) *server.Snapshot {
	doc, _ := e.docs.Open(uri, language, version, text)
	return doc
}

func (e *testEngine) DidChange(_ context.Context, uri string, version int32, changes []source.Change) (*server.Snapshot, error) {
	return e.docs.Change(uri, version, changes)
}

func (e *testEngine) DidClose(_ context.Context, uri string) { e.docs.Close(uri) }

func (e *testEngine) DidSave(context.Context, string) {}

func (e *testEngine) Snapshot(uri string) *server.Snapshot { return e.docs.Get(uri) }

func (e *testEngine) SnapshotByPath(path string) *server.Snapshot { return e.docs.ByPath(path) }

// text returns the latest text and version of an open document.
func (e *testEngine) text(uri string) (string, int32, bool) {
	doc := e.docs.Get(uri)
	if doc == nil {
		return "", 0, false
	}
	return doc.Text(), doc.Version(), true
}

// Hover describes the word at pos in the request's snapshot, with its
// range and the snapshot's version: enough to check positions end to end.
func (e *testEngine) Hover(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
	if e.hoverFunc != nil {
		return e.hoverFunc(ctx, doc, pos)
	}
	return wordHover(doc, pos)
}

func wordHover(doc *server.Snapshot, pos server.Position) (*server.Hover, error) {
	text, version := doc.Text(), doc.Version()
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

func (e *testEngine) Definition(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Location, error) {
	if e.definitionFunc != nil {
		return e.definitionFunc(ctx, doc, pos)
	}
	return nil, nil
}

func (e *testEngine) Implementation(context.Context, *server.Snapshot, server.Position) ([]server.Location, error) {
	return nil, nil
}

func (e *testEngine) References(context.Context, *server.Snapshot, server.Position, bool) ([]server.Location, error) {
	return nil, nil
}

// DocumentHighlights highlights every occurrence of the word at pos in
// the request's snapshot, written where "=" follows it.
func (e *testEngine) DocumentHighlights(_ context.Context, doc *server.Snapshot, pos server.Position) ([]server.Highlight, error) {
	h, err := wordHover(doc, pos)
	if err != nil || h == nil {
		return nil, err
	}
	word := strings.Trim(strings.Fields(h.Markdown)[0], "`")
	var out []server.Highlight
	for i, line := range strings.Split(doc.Text(), "\n") {
		for j := 0; ; j += len(word) {
			k := strings.Index(line[j:], word)
			if k < 0 {
				break
			}
			j += k
			if (j > 0 && isWordByte(line[j-1])) || (j+len(word) < len(line) && isWordByte(line[j+len(word)])) {
				continue
			}
			kind := server.HighlightRead
			if rest := strings.TrimSpace(line[j+len(word):]); strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==") {
				kind = server.HighlightWrite
			}
			r := server.Range{Start: server.Position{Line: i, Column: j}, End: server.Position{Line: i, Column: j + len(word)}}
			out = append(out, server.Highlight{Range: r, Kind: kind})
		}
	}
	return out, nil
}

func (e *testEngine) DocumentLinks(context.Context, *server.Snapshot) ([]server.Link, error) {
	return nil, nil
}

// WorkspaceSymbols finds the query as a word of the open documents.
func (e *testEngine) WorkspaceSymbols(_ context.Context, query string) ([]server.SymbolInfo, error) {
	var out []server.SymbolInfo
	for _, doc := range e.docs.All() {
		for i, line := range strings.Split(doc.Text(), "\n") {
			if j := strings.Index(line, query); j >= 0 && query != "" {
				r := server.Range{Start: server.Position{Line: i, Column: j}, End: server.Position{Line: i, Column: j + len(query)}}
				out = append(out, server.SymbolInfo{Name: query, Kind: "function", Container: "m", Location: server.Location{URI: doc.URI(), Path: doc.Path(), Range: r}})
			}
		}
	}
	return out, nil
}

// DocumentSymbols makes every line's first word a symbol whose range is
// the line.
func (e *testEngine) DocumentSymbols(_ context.Context, doc *server.Snapshot) ([]server.DocumentSymbol, error) {
	var out []server.DocumentSymbol
	for i, line := range strings.Split(doc.Text(), "\n") {
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		j := strings.Index(line, w[0])
		out = append(out, server.DocumentSymbol{Name: w[0], Kind: "variable",
			Range:          server.Range{Start: server.Position{Line: i}, End: server.Position{Line: i, Column: len(line)}},
			SelectionRange: server.Range{Start: server.Position{Line: i, Column: j}, End: server.Position{Line: i, Column: j + len(w[0])}}})
	}
	return out, nil
}

// PrepareCallHierarchy makes the word at pos an item of its document.
func (e *testEngine) PrepareCallHierarchy(_ context.Context, doc *server.Snapshot, pos server.Position) ([]server.CallItem, error) {
	h, err := wordHover(doc, pos)
	if err != nil || h == nil {
		return nil, err
	}
	name := strings.Trim(strings.Fields(h.Markdown)[0], "`")
	return []server.CallItem{{Name: name, Kind: "function", Detail: "m." + name,
		Location: server.Location{URI: doc.URI(), Path: doc.Path(), Range: *h.Range}, SelectionRange: *h.Range}}, nil
}

// IncomingCalls answers with the item it was sent, called at its name:
// what came back over the wire, converted.
func (e *testEngine) IncomingCalls(_ context.Context, item server.CallItem) ([]server.CallLink, error) {
	return []server.CallLink{{Item: item, Ranges: []server.Range{item.SelectionRange}}}, nil
}

// OutgoingCalls is IncomingCalls.
func (e *testEngine) OutgoingCalls(ctx context.Context, item server.CallItem) ([]server.CallLink, error) {
	return e.IncomingCalls(ctx, item)
}

func (e *testEngine) CodeActions(context.Context, *server.Snapshot, server.Range, []string) ([]server.CodeAction, error) {
	return e.codeActions, nil
}

func (e *testEngine) Shutdown(context.Context) error {
	e.shutdowns.Add(1)
	return nil
}

// noCommands answers every command with an error: the wire's tests that
// run commands use the real engine.
type noCommands struct{}

var errNoCommands = errors.New("this test engine runs no commands")

func (noCommands) Repro(context.Context, server.RunArgs) (*server.RunResult, error) {
	return nil, errNoCommands
}
func (noCommands) Explain(context.Context, server.RunArgs) (*server.RunResult, error) {
	return nil, errNoCommands
}
func (noCommands) CancelRunCommand(context.Context, server.CancelArgs) (*server.CancelResult, error) {
	return nil, errNoCommands
}
func (noCommands) Doctor(context.Context, server.DoctorArgs) (*server.DoctorResult, error) {
	return nil, errNoCommands
}
func (noCommands) SelectTargetCommand(context.Context, server.TargetArgs) (*server.CommandResult, error) {
	return nil, errNoCommands
}
func (noCommands) OpenMirrorCommand(context.Context, server.TargetArgs) (*server.CommandResult, error) {
	return nil, errNoCommands
}
func (noCommands) Gates(context.Context, server.GatesArgs) (*server.CommandResult, error) {
	return nil, errNoCommands
}
func (noCommands) Site(context.Context, server.TargetArgs) (*server.SiteResult, error) {
	return nil, errNoCommands
}
func (noCommands) Traceback(context.Context, server.TracebackArgs) (*server.TracebackResult, error) {
	return nil, errNoCommands
}
func (noCommands) LinksCommand(context.Context, server.LinksArgs) (*server.LinksResult, error) {
	return nil, errNoCommands
}
