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
	a.SetNotifier(p.Notifier)
	folders := p.WorkspaceFolders
	if len(folders) == 0 && p.RootDir != "" {
		folders = []string{p.RootDir}
	}
	return a.Engine.Initialize(ctx, server.InitializeParams{
		WorkspaceFolders:      folders,
		InitializationOptions: p.InitializationOptions,
		ClientName:            p.ClientName,
	})
}

func (a engineAdapter) DidChangeConfiguration(ctx context.Context, settings json.RawMessage) {
	a.Engine.DidChangeConfiguration(ctx, settings)
}
