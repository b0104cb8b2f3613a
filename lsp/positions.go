package lsp

import (
	"go.lsp.dev/protocol"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// The conversions themselves live in source.Mapper; these only change the
// struct types between go.lsp.dev/protocol and source.

func fromLSP(m *source.Mapper, p protocol.Position) (server.Position, error) {
	return m.FromUTF16(source.UTF16{Line: p.Line, Character: p.Character})
}

func fromLSPRange(m *source.Mapper, r protocol.Range) (server.Range, error) {
	return m.FromUTF16Range(source.UTF16Range{Start: source.UTF16(r.Start), End: source.UTF16(r.End)})
}

func toLSPRange(m *source.Mapper, r server.Range) (protocol.Range, error) {
	u, err := m.ToUTF16Range(r)
	if err != nil {
		return protocol.Range{}, err
	}
	return protocol.Range{Start: protocol.Position(u.Start), End: protocol.Position(u.End)}, nil
}
