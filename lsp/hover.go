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

// position decodes a text document position request, takes the
// document's snapshot and converts the position against it, on the read
// loop: the request then answers for that version alone, whatever edits
// arrive while it runs.
func (s *lspServer) position(raw json.RawMessage) (*server.Snapshot, server.Position, error) {
	var p textDocumentPositionParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, server.Position{}, err
	}
	doc, err := s.snapshot(p.TextDocument.URI)
	if err != nil {
		return nil, server.Position{}, err
	}
	pos, err := fromLSP(doc.Mapper(), p.Position)
	if err != nil {
		return nil, server.Position{}, invalidParams("%s: %v", p.TextDocument.URI, err)
	}
	return doc, pos, nil
}

// snapshot returns an open document's latest snapshot.
func (s *lspServer) snapshot(docURI string) (*server.Snapshot, error) {
	doc := s.engine.Snapshot(docURI)
	if doc == nil {
		return nil, invalidParams("document %s is not open", docURI)
	}
	return doc, nil
}

func (s *lspServer) hover(_ context.Context, raw json.RawMessage) (callRunner, error) {
	doc, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		h, err := s.engine.Hover(ctx, doc, pos)
		if err != nil || h == nil {
			return nil, err
		}
		contents := protocol.MarkupContent{Kind: protocol.Markdown, Value: h.Markdown}
		if s.client.capabilities().plainTextHover {
			contents = protocol.MarkupContent{Kind: protocol.PlainText, Value: plainText(h.Markdown)}
		}
		out := &protocol.Hover{Contents: contents}
		if h.Range != nil {
			r, err := toLSPRange(doc.Mapper(), *h.Range)
			if err != nil {
				s.log.Warn("hover range outside document", zap.String("uri", doc.URI()), zap.Error(err))
			} else {
				out.Range = &r
			}
		}
		return out, nil
	}, nil
}
