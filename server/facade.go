package server

import (
	"context"

	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/checks"
	"github.com/torchlsp/torchlsp/server/doctor"
	"github.com/torchlsp/torchlsp/server/links"
	"github.com/torchlsp/torchlsp/server/navigation"
	"github.com/torchlsp/torchlsp/server/runs"
	"github.com/torchlsp/torchlsp/server/site"
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
	Highlight          = navigation.Highlight
	HighlightKind      = navigation.HighlightKind

	RunResult    = runs.RunResult
	CancelResult = runs.CancelResult

	Link            = links.Link
	TracebackFrame  = links.TracebackFrame
	TracebackResult = links.TracebackResult
	TracebackNote   = links.TracebackNote
	LinksResult     = links.LinksResult

	CheckStep    = doctor.CheckStep
	DoctorResult = doctor.Result
	DoctorArgs   = api.DoctorArgs

	SiteResult        = site.SiteResult
	SitePackageDetail = site.SitePackageDetail
)

const (
	// HighlightText, HighlightRead and HighlightWrite say what a
	// highlighted place does with the name.
	HighlightText  = navigation.HighlightText
	HighlightRead  = navigation.HighlightRead
	HighlightWrite = navigation.HighlightWrite
	// MaxWorkspaceSymbols bounds a workspace symbol answer.
	MaxWorkspaceSymbols = navigation.MaxWorkspaceSymbols
	// MaxRuns bounds the runs in progress at once.
	MaxRuns = runs.MaxRuns
	// CodeGraphBreak and CodeRecompile mark explain's findings.
	CodeGraphBreak = runs.CodeGraphBreak
	CodeRecompile  = runs.CodeRecompile
	// MaxPublishedDiagnostics is the most diagnostics published for one
	// document version.
	MaxPublishedDiagnostics = checks.MaxPublishedDiagnostics
	// MaxTracebackBytes bounds the text one traceback command reads.
	MaxTracebackBytes = links.MaxTracebackBytes
	// CodeTraceback marks the diagnostic a traceback puts on the user's
	// line.
	CodeTraceback = links.CodeTraceback
)

// LinkURI is the file URI of a local file at a 0-based line, as editors
// open it.
func LinkURI(path string, line int) string { return links.LinkURI(path, line) }

// ErrHomeRefused is a run's error when it would send files of the user's
// home directory and nobody allowed it.
var ErrHomeRefused = runs.ErrHomeRefused

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

// DocumentHighlights lists the places of the document that name what
// is at pos, with what each does with it.
func (e *Engine) DocumentHighlights(ctx context.Context, doc *Snapshot, pos Position) ([]Highlight, error) {
	return e.nav.DocumentHighlights(ctx, doc, pos)
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

// Implementations lists where the target's torch defines the callable
// at pos for the compiler stack, with what each place is.
func (e *Engine) Implementations(ctx context.Context, doc *Snapshot, pos Position) ([]ImplementationItem, error) {
	return e.nav.Implementations(ctx, doc, pos)
}

// DocumentLinks returns the target paths a document names that lead to a
// local file.
func (e *Engine) DocumentLinks(ctx context.Context, doc *Snapshot) ([]Link, error) {
	return e.links.DocumentLinks(ctx, doc)
}

// Diagnostics checks a document against the target's torch; nil for
// documents that do not use torch.
func (e *Engine) Diagnostics(ctx context.Context, doc *Snapshot) ([]Diagnostic, error) {
	return e.checks.Diagnostics(ctx, doc)
}

// CodeActions offers the quick fixes of the diagnostics at rng, the runs
// of a compile call and the mapping of a traceback.
func (e *Engine) CodeActions(ctx context.Context, doc *Snapshot, rng Range, only []string) ([]CodeAction, error) {
	return e.checks.CodeActions(ctx, doc, rng, only)
}
