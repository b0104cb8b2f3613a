package lsp

import (
	"context"
	"encoding/json"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// Engine is what the language server needs from the editor-independent
// engine. Positions are byte columns (server.Position); URIs are passed
// through as the client sent them, and the engine decides what a non-file
// URI (untitled:, …) means.
//
// The text synchronisation methods and DidChangeConfiguration are called in
// the order their notifications arrived, before any later request is
// dispatched, so they must return quickly: store the text, schedule the
// work. Hover and Definition run concurrently with each other and with
// later notifications, and must honour ctx (it is cancelled when the
// client cancels the request or the connection ends).
type Engine interface {
	// Initialize prepares the engine for a workspace. An error fails the
	// initialize request, and the client may try again.
	Initialize(ctx context.Context, p InitializeParams) error
	// Initialized is called once the client has acknowledged
	// initialization and the initial configuration (if the client offers
	// one) has been delivered; slow start-up work belongs here.
	Initialized(ctx context.Context)
	// DidChangeConfiguration delivers the "torchlsp" settings section; nil
	// when the client sent none, which keeps the last settings but asks
	// the engine to read its configuration files again.
	DidChangeConfiguration(ctx context.Context, settings json.RawMessage)
	// DidOpen records a document and returns its first snapshot; language
	// is the client's languageId.
	DidOpen(ctx context.Context, uri, language string, version int32, text string) *server.Snapshot
	// DidChange applies a didChange's edits and returns the new
	// snapshot; an error means the edits do not fit the text.
	DidChange(ctx context.Context, uri string, version int32, changes []source.Change) (*server.Snapshot, error)
	DidClose(ctx context.Context, uri string)
	DidSave(ctx context.Context, uri string)
	// Snapshot returns an open document's latest snapshot, or nil;
	// SnapshotByPath the same by local file path.
	Snapshot(uri string) *server.Snapshot
	SnapshotByPath(path string) *server.Snapshot
	// Requests get the snapshot their positions were converted against,
	// taken on the read loop, and answer for that version alone.
	//
	// Hover returns nil, nil when there is nothing to show.
	Hover(ctx context.Context, doc *server.Snapshot, pos server.Position) (*server.Hover, error)
	Definition(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Location, error)
	// References lists the places that use the thing at pos: for a torch
	// config flag, every place torch reads it and every use in open
	// documents; for any other name of a mirrored package, every place in
	// the package and the open documents that names its definition.
	References(ctx context.Context, doc *server.Snapshot, pos server.Position, includeDeclaration bool) ([]server.Location, error)
	// DocumentHighlights lists the places of the document that name what
	// is at pos (a config flag, or a name whose definition is in a
	// mirrored package), each read, written or just named there.
	DocumentHighlights(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Highlight, error)
	// WorkspaceSymbols finds the symbols of the mirrored packages and the
	// open documents that match a query, best first.
	WorkspaceSymbols(ctx context.Context, query string) ([]server.SymbolInfo, error)
	// DocumentSymbols is a document's outline.
	DocumentSymbols(ctx context.Context, doc *server.Snapshot) ([]server.DocumentSymbol, error)
	// PrepareCallHierarchy is the function or class at pos as an item;
	// IncomingCalls and OutgoingCalls take such an item back (its path
	// and its name's start identify it).
	PrepareCallHierarchy(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.CallItem, error)
	IncomingCalls(ctx context.Context, item server.CallItem) ([]server.CallLink, error)
	OutgoingCalls(ctx context.Context, item server.CallItem) ([]server.CallLink, error)
	// Implementation lists where the target's torch defines the compiled
	// op at pos for the compiler stack (meta, decompositions, refs,
	// lowerings); nil for other names.
	Implementation(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Location, error)
	// DocumentLinks lists the target paths a document names that lead to
	// a local file (the mirror at a line, the workspace), and those it
	// will not link with a tooltip saying why.
	DocumentLinks(ctx context.Context, doc *server.Snapshot) ([]server.Link, error)
	// CodeActions offers quick fixes and commands for a range.
	CodeActions(ctx context.Context, doc *server.Snapshot, rng server.Range, only []string) ([]server.CodeAction, error)
	// Commands run what a code action or the user asked for, one method
	// per command (commands.go decodes their arguments).
	Commands
	// Shutdown releases targets and helpers. It is called once, either for
	// the client's shutdown request or when the connection ends without
	// one.
	Shutdown(ctx context.Context) error
}

// InitializeParams is what the engine learns from the initialize request.
type InitializeParams struct {
	// RootDir is the workspace root directory, "" when the client opened
	// no folder (or a non-file one).
	RootDir string
	// WorkspaceFolders are the workspace folder directories (file URIs
	// only); RootDir is among them when set.
	WorkspaceFolders []string
	// InitializationOptions is the client's initializationOptions, raw;
	// nil when absent.
	InitializationOptions json.RawMessage
	ClientName            string
	ClientVersion         string
	// ClientProcessID is the client's process id, 0 when not given. The
	// server already watches it and ends when that process does.
	ClientProcessID int
	// Notifier reaches the user. Before the initialize reply is sent,
	// messages are delivered but progress waits for the reply.
	Notifier server.Notifier
}
