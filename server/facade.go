package server

import (
	"context"
	"io"

	"github.com/torchlsp/torchlsp/server/navigation"
)

// The engine's requests, each delegated in one line to the feature that
// answers it; the feature packages hold their state and their rules.

// Names of the features' answers, for the facade's callers.
type (
	SymbolKind         = navigation.SymbolKind
	SymbolInfo         = navigation.SymbolInfo
	DocumentSymbol     = navigation.DocumentSymbol
	CallItem           = navigation.CallItem
	CallLink           = navigation.CallLink
	ImplementationItem = navigation.ImplementationItem
)

// MaxWorkspaceSymbols bounds a workspace symbol answer.
const MaxWorkspaceSymbols = navigation.MaxWorkspaceSymbols

// Hover describes the torch object or config flag at pos; nil when
// torchlsp has nothing to say.
func (e *Engine) Hover(ctx context.Context, doc *Snapshot, pos Position) (*Hover, error) {
	return e.nav.Hover(ctx, doc, pos)
}

// Definition returns where the torch object or config flag at pos is
// defined, in the read-only mirror of the target's sources.
func (e *Engine) Definition(ctx context.Context, doc *Snapshot, pos Position) ([]Location, error) {
	return e.nav.Definition(ctx, doc, pos)
}

// References lists the places that name what is at pos.
func (e *Engine) References(ctx context.Context, doc *Snapshot, pos Position, includeDecl bool) ([]Location, error) {
	return e.nav.References(ctx, doc, pos, includeDecl)
}

// WorkspaceSymbols finds the symbols whose names match query.
func (e *Engine) WorkspaceSymbols(ctx context.Context, query string) ([]SymbolInfo, error) {
	return e.nav.WorkspaceSymbols(ctx, query)
}

// DocumentSymbols is the outline of a document.
func (e *Engine) DocumentSymbols(ctx context.Context, doc *Snapshot) ([]DocumentSymbol, error) {
	return e.nav.DocumentSymbols(ctx, doc)
}

// PrepareCallHierarchy is the function, method or class at pos as a call
// hierarchy item.
func (e *Engine) PrepareCallHierarchy(ctx context.Context, doc *Snapshot, pos Position) ([]CallItem, error) {
	return e.nav.PrepareCallHierarchy(ctx, doc, pos)
}

// IncomingCalls lists what calls the item.
func (e *Engine) IncomingCalls(ctx context.Context, item CallItem) ([]CallLink, error) {
	return e.nav.IncomingCalls(ctx, item)
}

// OutgoingCalls lists what the item's body calls.
func (e *Engine) OutgoingCalls(ctx context.Context, item CallItem) ([]CallLink, error) {
	return e.nav.OutgoingCalls(ctx, item)
}

// Implementation lists where the target's torch defines the callable at
// pos for the compiler stack.
func (e *Engine) Implementation(ctx context.Context, doc *Snapshot, pos Position) ([]Location, error) {
	return e.nav.Implementation(ctx, doc, pos)
}

// Implementations is Implementation with what each place is, for the
// command line.
func (e *Engine) Implementations(ctx context.Context, doc *Snapshot, pos Position) ([]ImplementationItem, error) {
	return e.nav.Implementations(ctx, doc, pos)
}

// Gates prints a config flag's definition and every place the target's
// torch reads it (`torchlsp gates FLAG`).
func (e *Engine) Gates(ctx context.Context, target, key string, w io.Writer) error {
	return e.nav.Gates(ctx, target, key, w)
}
