package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/protocol"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// The call hierarchy: textDocument/prepareCallHierarchy names the item at
// a position, and callHierarchy/incomingCalls and outgoingCalls take that
// item back. An item is identified by its file and its name's start; its
// positions convert with that file's text (the open document's, else the
// file's), as every location does.

func (s *lspServer) prepareCallHierarchy(_ context.Context, raw json.RawMessage) (callRunner, error) {
	doc, pos, err := s.position(raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		items, err := s.engine.PrepareCallHierarchy(ctx, doc, pos)
		if err != nil || len(items) == 0 {
			return nil, err
		}
		out := make([]protocol.CallHierarchyItem, 0, len(items))
		for _, it := range items {
			pi, err := s.lspCallItem(it)
			if err != nil {
				return nil, err
			}
			out = append(out, pi)
		}
		return out, nil
	}, nil
}

func (s *lspServer) incomingCalls(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p protocol.CallHierarchyIncomingCallsParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	item, _, err := s.engineCallItem(p.Item)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		links, err := s.engine.IncomingCalls(ctx, item)
		if err != nil {
			return nil, err
		}
		out := make([]protocol.CallHierarchyIncomingCall, 0, len(links))
		for _, l := range links {
			from, err := s.lspCallItem(l.Item)
			if err != nil {
				continue // a caller whose file cannot be read
			}
			m, err := s.itemMapper(l.Item)
			if err != nil {
				continue
			}
			ranges, err := lspRanges(m, l.Ranges)
			if err != nil {
				continue
			}
			out = append(out, protocol.CallHierarchyIncomingCall{From: from, FromRanges: ranges})
		}
		return out, nil
	}, nil
}

func (s *lspServer) outgoingCalls(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p protocol.CallHierarchyOutgoingCallsParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	item, m, err := s.engineCallItem(p.Item)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		links, err := s.engine.OutgoingCalls(ctx, item)
		if err != nil {
			return nil, err
		}
		out := make([]protocol.CallHierarchyOutgoingCall, 0, len(links))
		for _, l := range links {
			to, err := s.lspCallItem(l.Item)
			if err != nil {
				continue
			}
			ranges, err := lspRanges(m, l.Ranges) // in the caller's file: the item asked about
			if err != nil {
				continue
			}
			out = append(out, protocol.CallHierarchyOutgoingCall{To: to, FromRanges: ranges})
		}
		return out, nil
	}, nil
}

// lspCallItem converts an engine's item to LSP units.
func (s *lspServer) lspCallItem(it server.CallItem) (protocol.CallHierarchyItem, error) {
	m, err := s.itemMapper(it)
	if err != nil {
		return protocol.CallHierarchyItem{}, err
	}
	r, err := toLSPRange(m, it.Location.Range)
	if err != nil {
		return protocol.CallHierarchyItem{}, err
	}
	sel, err := toLSPRange(m, it.SelectionRange)
	if err != nil {
		return protocol.CallHierarchyItem{}, err
	}
	u := protocol.DocumentURI(it.Location.URI)
	if u == "" {
		u = protocol.DocumentURI(source.FileURI(it.Location.Path))
	}
	return protocol.CallHierarchyItem{Name: it.Name, Kind: symbolKind(it.Kind), Detail: it.Detail, URI: u, Range: r, SelectionRange: sel}, nil
}

// itemMapper is the mapper of an item's file.
func (s *lspServer) itemMapper(it server.CallItem) (*source.Mapper, error) {
	if it.Location.URI != "" {
		return s.client.mapperFor(it.Location.URI)
	}
	return s.client.mapperForPath(it.Location.Path)
}

// engineCallItem converts an item the editor sent back, with the mapper
// of its file.
func (s *lspServer) engineCallItem(pi protocol.CallHierarchyItem) (server.CallItem, *source.Mapper, error) {
	m, err := s.client.mapperFor(string(pi.URI))
	if err != nil {
		return server.CallItem{}, nil, invalidParams("call hierarchy item %s: %v", pi.URI, err)
	}
	r, err := fromLSPRange(m, pi.Range)
	if err != nil {
		return server.CallItem{}, nil, invalidParams("call hierarchy item %s: %v", pi.URI, err)
	}
	sel, err := fromLSPRange(m, pi.SelectionRange)
	if err != nil {
		return server.CallItem{}, nil, invalidParams("call hierarchy item %s: %v", pi.URI, err)
	}
	it := server.CallItem{Name: pi.Name, Kind: engineKind(pi.Kind), Detail: pi.Detail, SelectionRange: sel}
	it.Location.Range = r
	if s.engine.Snapshot(string(pi.URI)) != nil {
		it.Location.URI = string(pi.URI)
	}
	if path, ok := source.FilePath(string(pi.URI)); ok {
		it.Location.Path = path
	}
	return it, m, nil
}

func lspRanges(m *source.Mapper, rs []server.Range) ([]protocol.Range, error) {
	out := make([]protocol.Range, 0, len(rs))
	for _, r := range rs {
		lr, err := toLSPRange(m, r)
		if err != nil {
			return nil, fmt.Errorf("range %v: %w", r, err)
		}
		out = append(out, lr)
	}
	return out, nil
}
