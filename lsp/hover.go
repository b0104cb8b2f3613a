package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
)

type textDocumentPositionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Position     protocol.Position      `json:"position"`
}

// position decodes a text document position request and converts its
// position against the document as it is now, on the read loop.
func (s *lspServer) position(raw json.RawMessage) (string, *Mapper, server.Position, error) {
	var p textDocumentPositionParams
	if err := decodeParams(raw, &p); err != nil {
		return "", nil, server.Position{}, err
	}
	m, err := s.client.mapperFor(p.TextDocument.URI)
	if err != nil {
		return "", nil, server.Position{}, invalidParams("%v", err)
	}
	pos, err := m.FromLSP(p.Position)
	if err != nil {
		return "", nil, server.Position{}, invalidParams("%s: %v", p.TextDocument.URI, err)
	}
	return p.TextDocument.URI, m, pos, nil
}

func (s *lspServer) hover(_ context.Context, raw json.RawMessage) (callRunner, error) {
	docURI, m, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		h, err := s.engine.Hover(ctx, docURI, pos)
		if err != nil || h == nil {
			return nil, err
		}
		kind := protocol.Markdown
		if s.client.capabilities().plainTextHover {
			kind = protocol.PlainText
		}
		out := &protocol.Hover{Contents: protocol.MarkupContent{Kind: kind, Value: h.Markdown}}
		if h.Range != nil {
			r, err := m.ToLSPRange(*h.Range)
			if err != nil {
				s.log.Warn("hover range outside document", zap.String("uri", docURI), zap.Error(err))
			} else {
				out.Range = &r
			}
		}
		return out, nil
	}, nil
}
