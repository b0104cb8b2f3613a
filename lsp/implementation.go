package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"

	"github.com/torchlsp/torchlsp/server"
)

// implementationEngine is an Engine that answers textDocument/implementation:
// where the target's torch defines a compiled op for the compiler stack.
// Engines without it answer null.
type implementationEngine interface {
	Implementation(ctx context.Context, uri string, pos server.Position) ([]server.Location, error)
}

func (a engineAdapter) Implementation(ctx context.Context, uri string, pos server.Position) ([]server.Location, error) {
	return a.e.Implementation(ctx, uri, pos)
}

func (s *lspServer) implementation(_ context.Context, raw json.RawMessage) (callRunner, error) {
	docURI, _, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	ie, ok := s.engine.(implementationEngine)
	return func(ctx context.Context) (any, error) {
		if !ok {
			return nil, nil
		}
		locs, err := ie.Implementation(ctx, docURI, pos)
		if err != nil || len(locs) == 0 {
			return nil, err
		}
		out := make([]protocol.Location, 0, len(locs))
		for _, loc := range locs {
			out = append(out, s.location(loc))
		}
		return out, nil
	}, nil
}
