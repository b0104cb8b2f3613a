package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

type textDocumentIdentifier struct {
	URI string `json:"uri"`
}

type versionedTextDocumentIdentifier struct {
	URI     string `json:"uri"`
	Version int32  `json:"version"`
}

// didChangeParams is declared here because go.lsp.dev/protocol's
// TextDocumentContentChangeEvent holds its range by value, so a
// whole-document change (no range) would read as an insertion at 0:0.
type didChangeParams struct {
	TextDocument   versionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []source.Change                 `json:"contentChanges"`
}

func (s *lspServer) didOpen(ctx context.Context, raw json.RawMessage) error {
	var p struct {
		TextDocument struct {
			URI        string `json:"uri"`
			LanguageID string `json:"languageId"`
			Version    int32  `json:"version"`
			Text       string `json:"text"`
		} `json:"textDocument"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return err
	}
	td := p.TextDocument
	s.engine.DidOpen(ctx, td.URI, td.LanguageID, td.Version, td.Text)
	return nil
}

func (s *lspServer) didChange(ctx context.Context, raw json.RawMessage) error {
	var p didChangeParams
	if err := decodeParams(raw, &p); err != nil {
		return err
	}
	if _, err := s.engine.DidChange(ctx, p.TextDocument.URI, p.TextDocument.Version, p.ContentChanges); err != nil {
		// The editor and server now disagree on the text; say so rather
		// than answer from a stale copy silently.
		s.client.LogMessage(ctx, server.MessageError, fmt.Sprintf("torchlsp lost track of %s: %v; reopen the file", p.TextDocument.URI, err))
		s.log.Error("applying change", zap.Error(err))
		return err
	}
	return nil
}

func (s *lspServer) didClose(ctx context.Context, raw json.RawMessage) error {
	var p struct {
		TextDocument textDocumentIdentifier `json:"textDocument"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return err
	}
	s.engine.DidClose(ctx, p.TextDocument.URI)
	return nil
}

func (s *lspServer) didSave(ctx context.Context, raw json.RawMessage) error {
	var p struct {
		TextDocument textDocumentIdentifier `json:"textDocument"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return err
	}
	s.engine.DidSave(ctx, p.TextDocument.URI)
	return nil
}
