package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
)

func (s *lspServer) definition(_ context.Context, raw json.RawMessage) (callRunner, error) {
	return s.locationsAt(raw, s.engine.Definition)
}

// locationsAt answers a position request whose result is locations
// (definition, implementation): the snapshot and position are taken now,
// on the read loop, and query runs with them later.
func (s *lspServer) locationsAt(raw json.RawMessage, query func(context.Context, *server.Snapshot, server.Position) ([]server.Location, error)) (callRunner, error) {
	doc, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		locs, err := query(ctx, doc, pos)
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

// location converts a location in a local file, reading the file (or the
// open document) to count UTF-16 columns. A file that cannot be read keeps
// its byte columns, which are right for ASCII lines.
func (s *lspServer) location(loc server.Location) protocol.Location {
	out := protocol.Location{URI: uri.File(loc.Path)}
	m, err := s.client.mapperForPath(loc.Path)
	if err == nil {
		var r protocol.Range
		if r, err = toLSPRange(m, loc.Range); err == nil {
			out.Range = r
			return out
		}
	}
	s.log.Warn("definition range not converted", zap.String("path", loc.Path), zap.Error(err))
	out.Range = protocol.Range{
		Start: protocol.Position{Line: uint32(max(loc.Range.Start.Line, 0)), Character: uint32(max(loc.Range.Start.Column, 0))},
		End:   protocol.Position{Line: uint32(max(loc.Range.End.Line, 0)), Character: uint32(max(loc.Range.End.Column, 0))},
	}
	return out
}
