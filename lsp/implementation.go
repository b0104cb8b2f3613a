package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
)

// implementation answers textDocument/implementation: where the target's
// torch defines a compiled op for the compiler stack.
func (s *lspServer) implementation(_ context.Context, raw json.RawMessage) (callRunner, error) {
	doc, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		locs, err := s.engine.Implementation(ctx, doc, pos)
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
