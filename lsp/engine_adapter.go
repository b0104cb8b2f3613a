package lsp

import (
	"context"
	"encoding/json"

	"github.com/torchlsp/torchlsp/server"
)

// NewEngine adapts the torchlsp engine to the interface the wire needs.
// The engine's methods match it; only Initialize translates.
func NewEngine(e *server.Engine) Engine { return engineAdapter{e} }

type engineAdapter struct{ *server.Engine }

func (a engineAdapter) Initialize(ctx context.Context, p InitializeParams) error {
	folders := p.WorkspaceFolders
	if len(folders) == 0 && p.RootDir != "" {
		folders = []string{p.RootDir}
	}
	return a.Engine.Initialize(ctx, server.InitializeParams{
		WorkspaceFolders:      folders,
		InitializationOptions: p.InitializationOptions,
		ClientName:            p.ClientName,
		Notifier:              p.Notifier,
	})
}

// Implementation is the engine's Implementations as the places alone.
func (a engineAdapter) Implementation(ctx context.Context, doc *server.Snapshot, pos server.Position) ([]server.Location, error) {
	items, err := a.Implementations(ctx, doc, pos)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	locs := make([]server.Location, len(items))
	for i, it := range items {
		locs[i] = it.Location
	}
	return locs, nil
}

func (a engineAdapter) DidChangeConfiguration(ctx context.Context, settings json.RawMessage) {
	a.Engine.DidChangeConfiguration(ctx, settings)
}
