package server_test

// The one place the marker tests (marker_test.go) call server.Engine.
// Everything else in them works on the plain types below, so that a
// change of the engine's API (a request taking a document snapshot
// instead of a URI) is adapted here and nowhere else.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/source"
)

// pos is a place in a document: 0-based line, 0-based UTF-8 byte column.
type pos struct{ Line, Col int }

// span is a half-open range of a document.
type span struct{ Start, End pos }

// location is an answer's place: an open document (URI set) or a local
// file (Path), with its path on the target when it is a mirrored one.
type location struct {
	URI, Path, TargetPath string
	Range                 span
}

type hoverResult struct {
	Markdown string
	Range    *span
}

type related struct {
	Location location
	Message  string
}

type diagnostic struct {
	Range    span
	Severity int // 1 error … 4 hint, as in LSP
	Code     string
	Message  string
	Related  []related
}

type textEdit struct {
	Range   span
	NewText string
}

type codeAction struct {
	Title, Kind string
	Preferred   bool
	Codes       []string              // of the diagnostics it fixes
	Edits       map[string][]textEdit // by document URI
	Command     string                // the command's name, if any
}

// testEngine is an engine on a local target, with its cache directory.
type testEngine struct {
	e     *server.Engine
	cache string
}

// newEngine starts an engine whose editor settings are settings, for the
// workspace folder, with its own XDG directories; it shuts down when the
// test ends. A flag's value is waited for as long as it takes, so that
// hovers do not depend on the machine's speed.
func newEngine(t *testing.T, settings []byte, folder string) *testEngine {
	t.Helper()
	root := t.TempDir()
	dirs := config.Dirs{Config: root + "/config", Cache: root + "/cache", State: root + "/state"}
	e := server.New(server.Options{Dirs: dirs, ValueWait: 2 * time.Minute, ModelWait: 2 * time.Minute})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("engine shutdown: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Initialize(ctx, server.InitializeParams{WorkspaceFolders: []string{folder}, InitializationOptions: settings}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &testEngine{e: e, cache: dirs.Cache}
}

func openDoc(e *testEngine, uri, text string) { e.e.DidOpen(context.Background(), uri, "", 1, text) }

func changeDoc(e *testEngine, uri string, version int32, text string) {
	if _, err := e.e.DidChange(context.Background(), uri, version, []source.Change{{Text: text}}); err != nil {
		panic(err) // a whole-text change always applies to an open document
	}
}

// snapshotOf is the document's latest snapshot, as the wire takes it for a
// request.
func snapshotOf(e *testEngine, uri string) *server.Snapshot { return e.e.Snapshot(uri) }

func hoverAt(ctx context.Context, e *testEngine, uri string, p pos) (*hoverResult, error) {
	h, err := e.e.Hover(ctx, snapshotOf(e, uri), toPosition(p))
	if err != nil || h == nil {
		return nil, err
	}
	out := &hoverResult{Markdown: h.Markdown}
	if h.Range != nil {
		r := fromRange(*h.Range)
		out.Range = &r
	}
	return out, nil
}

func definitionAt(ctx context.Context, e *testEngine, uri string, p pos) ([]location, error) {
	locs, err := e.e.Definition(ctx, snapshotOf(e, uri), toPosition(p))
	return fromLocations(locs), err
}

func referencesAt(ctx context.Context, e *testEngine, uri string, p pos) ([]location, error) {
	locs, err := e.e.References(ctx, snapshotOf(e, uri), toPosition(p), true)
	return fromLocations(locs), err
}

// highlight is a place of a document that names what the cursor is on,
// and what it does there ("read", "write", "text").
type highlight struct {
	Range span
	Kind  string
}

func highlightsAt(ctx context.Context, e *testEngine, uri string, p pos) ([]highlight, error) {
	hs, err := e.e.DocumentHighlights(ctx, snapshotOf(e, uri), toPosition(p))
	out := make([]highlight, 0, len(hs))
	for _, h := range hs {
		out = append(out, highlight{Range: fromRange(h.Range), Kind: string(h.Kind)})
	}
	return out, err
}

// callItem is an item of the call hierarchy: its kind, qualified name
// and place (the statement; sel the name).
type callItem struct {
	Kind, Detail string
	Location     location
	Sel          span
	item         server.CallItem
}

// callLink is an item that calls, or is called by, another, with the
// calls' places.
type callLink struct {
	Item   callItem
	Ranges []span
}

type symbolInfo struct {
	Name, Kind, Container string
	Location              location
}

type outlineItem struct {
	Name, Kind string
	Range, Sel span
	Children   []outlineItem
}

func prepareCallsAt(ctx context.Context, e *testEngine, uri string, p pos) ([]callItem, error) {
	items, err := e.e.PrepareCallHierarchy(ctx, snapshotOf(e, uri), toPosition(p))
	out := make([]callItem, 0, len(items))
	for _, it := range items {
		out = append(out, fromCallItem(it))
	}
	return out, err
}

// callsOf asks for an item's incoming (or outgoing) calls.
func callsOf(ctx context.Context, e *testEngine, it callItem, incoming bool) ([]callLink, error) {
	calls := e.e.OutgoingCalls
	if incoming {
		calls = e.e.IncomingCalls
	}
	links, err := calls(ctx, it.item)
	out := make([]callLink, 0, len(links))
	for _, l := range links {
		cl := callLink{Item: fromCallItem(l.Item)}
		for _, r := range l.Ranges {
			cl.Ranges = append(cl.Ranges, fromRange(r))
		}
		out = append(out, cl)
	}
	return out, err
}

func fromCallItem(it server.CallItem) callItem {
	return callItem{Kind: string(it.Kind), Detail: it.Detail, Location: fromLocation(it.Location), Sel: fromRange(it.SelectionRange), item: it}
}

func workspaceSymbols(ctx context.Context, e *testEngine, query string) ([]symbolInfo, error) {
	syms, err := e.e.WorkspaceSymbols(ctx, query)
	out := make([]symbolInfo, 0, len(syms))
	for _, s := range syms {
		out = append(out, symbolInfo{Name: s.Name, Kind: string(s.Kind), Container: s.Container, Location: fromLocation(s.Location)})
	}
	return out, err
}

func documentSymbols(ctx context.Context, e *testEngine, uri string) ([]outlineItem, error) {
	syms, err := e.e.DocumentSymbols(ctx, snapshotOf(e, uri))
	return fromOutline(syms), err
}

func fromOutline(syms []server.DocumentSymbol) []outlineItem {
	var out []outlineItem
	for _, s := range syms {
		out = append(out, outlineItem{Name: s.Name, Kind: string(s.Kind), Range: fromRange(s.Range), Sel: fromRange(s.SelectionRange), Children: fromOutline(s.Children)})
	}
	return out
}

func diagnosticsFor(ctx context.Context, e *testEngine, uri string) ([]diagnostic, error) {
	ds, err := e.e.Diagnostics(ctx, snapshotOf(e, uri))
	if err != nil {
		return nil, err
	}
	out := make([]diagnostic, 0, len(ds))
	for _, d := range ds {
		out = append(out, fromDiagnostic(d))
	}
	return out, nil
}

func codeActionsAt(ctx context.Context, e *testEngine, uri string, r span) ([]codeAction, error) {
	as, err := e.e.CodeActions(ctx, snapshotOf(e, uri), server.Range{Start: toPosition(r.Start), End: toPosition(r.End)}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]codeAction, 0, len(as))
	for _, a := range as {
		ca := codeAction{Title: a.Title, Kind: a.Kind, Preferred: a.Preferred, Edits: map[string][]textEdit{}}
		for _, d := range a.Diagnostics {
			ca.Codes = append(ca.Codes, d.Code)
		}
		for uri, edits := range a.Edits {
			for _, ed := range edits {
				ca.Edits[uri] = append(ca.Edits[uri], textEdit{Range: fromRange(ed.Range), NewText: ed.NewText})
			}
		}
		if a.Command != nil {
			ca.Command = a.Command.Name
		}
		out = append(out, ca)
	}
	return out, nil
}

// mirrorPath is where the mirror holds file rel of the default target's
// site: through the site view the engine builds (which mirrors the
// target's packages and links to them), resolved to the mirror itself.
func mirrorPath(ctx context.Context, e *testEngine, rel string) (string, error) {
	res, err := e.e.BuildSite(ctx)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(filepath.Join(res.Path, filepath.FromSlash(rel)))
}

func toPosition(p pos) server.Position { return server.Position{Line: p.Line, Column: p.Col} }

func fromRange(r server.Range) span {
	return span{pos{r.Start.Line, r.Start.Column}, pos{r.End.Line, r.End.Column}}
}

func fromLocations(locs []server.Location) []location {
	out := make([]location, 0, len(locs))
	for _, l := range locs {
		out = append(out, fromLocation(l))
	}
	return out
}

func fromLocation(l server.Location) location {
	return location{URI: l.URI, Path: l.Path, TargetPath: l.TargetPath, Range: fromRange(l.Range)}
}

func fromDiagnostic(d server.Diagnostic) diagnostic {
	out := diagnostic{Range: fromRange(d.Range), Severity: int(d.Severity), Code: d.Code, Message: d.Message}
	for _, r := range d.Related {
		out.Related = append(out.Related, related{Location: fromLocation(r.Location), Message: r.Message})
	}
	return out
}
