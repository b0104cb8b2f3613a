package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
)

// documentHighlight answers textDocument/documentHighlight: the places of
// the document that name what the cursor is on, their ranges converted
// with the mapper of the snapshot the position was converted against.
func (s *lspServer) documentHighlight(_ context.Context, raw json.RawMessage) (callRunner, error) {
	doc, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		hs, err := s.engine.DocumentHighlights(ctx, doc, pos)
		if err != nil || len(hs) == 0 {
			return nil, err
		}
		out := make([]protocol.DocumentHighlight, 0, len(hs))
		for _, h := range hs {
			r, err := toLSPRange(doc.Mapper(), h.Range)
			if err != nil {
				s.log.Warn("highlight outside document", zap.String("uri", doc.URI()), zap.Error(err))
				continue
			}
			out = append(out, protocol.DocumentHighlight{Range: r, Kind: highlightKind(h.Kind)})
		}
		return out, nil
	}, nil
}

// highlightKind is the protocol's kind of a highlight.
func highlightKind(k server.HighlightKind) protocol.DocumentHighlightKind {
	switch k {
	case server.HighlightRead:
		return protocol.DocumentHighlightKindRead
	case server.HighlightWrite:
		return protocol.DocumentHighlightKindWrite
	}
	return protocol.DocumentHighlightKindText
}
