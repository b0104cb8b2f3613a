package lsp

import (
	"context"
	"encoding/json"

	"github.com/torchlsp/torchlsp/server"
)

// NewEngine adapts the torchlsp engine to the interface the wire needs.
func NewEngine(e *server.Engine) Engine { return engineAdapter{e} }

type engineAdapter struct{ e *server.Engine }

func (a engineAdapter) Initialize(ctx context.Context, p InitializeParams) error {
	a.e.SetNotifier(p.Notifier)
	folders := p.WorkspaceFolders
	if len(folders) == 0 && p.RootDir != "" {
		folders = []string{p.RootDir}
	}
	return a.e.Initialize(ctx, server.InitializeParams{
		WorkspaceFolders:      folders,
		InitializationOptions: p.InitializationOptions,
		ClientName:            p.ClientName,
	})
}

func (a engineAdapter) Initialized(ctx context.Context) { a.e.Initialized(ctx) }

func (a engineAdapter) DidChangeConfiguration(ctx context.Context, settings json.RawMessage) {
	a.e.DidChangeConfiguration(ctx, settings)
}

func (a engineAdapter) DidOpen(_ context.Context, uri string, version int32, text string) {
	a.e.DidOpen(uri, version, text)
}

func (a engineAdapter) DidChange(_ context.Context, uri string, version int32, text string) {
	a.e.DidChange(uri, version, text)
}

func (a engineAdapter) DidClose(_ context.Context, uri string) { a.e.DidClose(uri) }

func (a engineAdapter) DidSave(ctx context.Context, uri string) { a.e.DidSave(ctx, uri) }

func (a engineAdapter) Hover(ctx context.Context, uri string, pos server.Position) (*server.Hover, error) {
	return a.e.Hover(ctx, uri, pos)
}

func (a engineAdapter) Definition(ctx context.Context, uri string, pos server.Position) ([]server.Location, error) {
	return a.e.Definition(ctx, uri, pos)
}

func (a engineAdapter) Shutdown(ctx context.Context) error { return a.e.Shutdown(ctx) }

func (a engineAdapter) References(ctx context.Context, uri string, pos server.Position, includeDecl bool) ([]server.Location, error) {
	return a.e.References(ctx, uri, pos, includeDecl)
}

func (a engineAdapter) CodeActions(ctx context.Context, uri string, rng server.Range, only []string) ([]server.CodeAction, error) {
	return a.e.CodeActions(ctx, uri, rng, only)
}

func (a engineAdapter) Commands() []string { return a.e.Commands() }

func (a engineAdapter) ExecuteCommand(ctx context.Context, name string, args []json.RawMessage) (any, error) {
	return a.e.ExecuteCommand(ctx, name, args)
}
