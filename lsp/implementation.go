package lsp

import (
	"context"
	"encoding/json"
)

// implementation answers textDocument/implementation: where the target's
// torch defines a compiled op for the compiler stack.
func (s *lspServer) implementation(_ context.Context, raw json.RawMessage) (callRunner, error) {
	return s.locationsAt(raw, s.engine.Implementation)
}
