package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/protocol"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
)

// workspaceSymbol answers workspace/symbol: the mirrored packages' and
// the open documents' symbols that match the query, best first.
func (s *lspServer) workspaceSymbol(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p protocol.WorkspaceSymbolParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		syms, err := s.engine.WorkspaceSymbols(ctx, p.Query)
		if err != nil {
			return nil, err
		}
		out := make([]protocol.SymbolInformation, 0, len(syms))
		for _, sym := range syms {
			loc, err := s.anyLocation(ctx, sym.Location)
			if err != nil {
				s.log.Debug("symbol not converted", zap.String("name", sym.Name), zap.Error(err))
				continue
			}
			out = append(out, protocol.SymbolInformation{
				Name: sym.Name, Kind: symbolKind(sym.Kind), Location: loc, ContainerName: sym.Container,
			})
		}
		return out, nil
	}, nil
}

// documentSymbol answers textDocument/documentSymbol: the outline, nested.
func (s *lspServer) documentSymbol(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p protocol.DocumentSymbolParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	doc, err := s.snapshot(string(p.TextDocument.URI))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (any, error) {
		syms, err := s.engine.DocumentSymbols(ctx, doc)
		if err != nil {
			return nil, err
		}
		return documentSymbols(doc, syms)
	}, nil
}

func documentSymbols(doc *server.Snapshot, syms []server.DocumentSymbol) ([]protocol.DocumentSymbol, error) {
	out := make([]protocol.DocumentSymbol, 0, len(syms))
	for _, sym := range syms {
		r, err := toLSPRange(doc.Mapper(), sym.Range)
		if err != nil {
			return nil, err
		}
		sel, err := toLSPRange(doc.Mapper(), sym.SelectionRange)
		if err != nil {
			return nil, err
		}
		children, err := documentSymbols(doc, sym.Children)
		if err != nil {
			return nil, err
		}
		out = append(out, protocol.DocumentSymbol{
			Name: sym.Name, Kind: symbolKind(sym.Kind), Range: r, SelectionRange: sel, Children: children,
		})
	}
	return out, nil
}

// anyLocation converts a location in an open document (URI set) or a
// local file to LSP units.
func (s *lspServer) anyLocation(ctx context.Context, loc server.Location) (protocol.Location, error) {
	if loc.URI != "" {
		return s.client.documentLocation(ctx, loc.URI, loc.Range)
	}
	return s.client.lspLocation(loc)
}

// symbolKind is the LSP kind of an engine's symbol kind.
func symbolKind(k server.SymbolKind) protocol.SymbolKind {
	switch k {
	case "module":
		return protocol.SymbolKindModule
	case "class":
		return protocol.SymbolKindClass
	case "method":
		return protocol.SymbolKindMethod
	case "function":
		return protocol.SymbolKindFunction
	case "constant":
		return protocol.SymbolKindConstant
	case "field":
		return protocol.SymbolKindField
	}
	return protocol.SymbolKindVariable
}

// engineKind is the engine's kind of an LSP symbol kind (items come
// back from the editor).
func engineKind(k protocol.SymbolKind) server.SymbolKind {
	switch k {
	case protocol.SymbolKindModule:
		return "module"
	case protocol.SymbolKindClass:
		return "class"
	case protocol.SymbolKindMethod:
		return "method"
	case protocol.SymbolKindFunction:
		return "function"
	case protocol.SymbolKindConstant:
		return "constant"
	case protocol.SymbolKindField:
		return "field"
	}
	return "variable"
}
