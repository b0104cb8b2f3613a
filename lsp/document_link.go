package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
)

type documentLinkParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

// documentLink answers textDocument/documentLink: the target paths a
// document names (tracebacks, logs, reports, Python files) that lead to
// the mirror at a line or to the workspace. A path the engine will not
// link for a stated reason (another torch version wrote it) is a link
// with no target whose tooltip says why.
func (s *lspServer) documentLink(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p documentLinkParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	doc, err := s.snapshot(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		links, err := s.engine.DocumentLinks(ctx, doc)
		if err != nil {
			return nil, err
		}
		out := make([]protocol.DocumentLink, 0, len(links))
		for _, l := range links {
			r, err := toLSPRange(doc.Mapper(), server.Range{
				Start: server.Position{Line: l.Ref.Line, Column: l.Ref.Start},
				End:   server.Position{Line: l.Ref.Line, Column: l.Ref.End},
			})
			if err != nil {
				s.log.Warn("link range outside document", zap.String("uri", doc.URI()), zap.Error(err))
				continue
			}
			dl := protocol.DocumentLink{Range: r, Tooltip: l.Tooltip}
			if l.Path != "" {
				dl.Target = protocol.DocumentURI(server.LinkURI(l.Path, l.Line))
			}
			out = append(out, dl)
		}
		return out, nil
	}, nil
}
