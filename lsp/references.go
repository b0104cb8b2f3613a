package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
)

type referenceParams struct {
	textDocumentPositionParams
	Context struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
}

func (s *lspServer) references(_ context.Context, raw json.RawMessage) (callRunner, error) {
	doc, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	var p referenceParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		locs, err := s.engine.References(ctx, doc, pos, p.Context.IncludeDeclaration)
		if err != nil || len(locs) == 0 {
			return nil, err
		}
		out := make([]protocol.Location, 0, len(locs))
		for _, loc := range locs {
			if loc.URI != "" {
				if l, err := s.client.documentLocation(ctx, loc.URI, loc.Range); err == nil {
					out = append(out, l)
					continue
				}
			}
			out = append(out, s.location(loc))
		}
		return out, nil
	}, nil
}
