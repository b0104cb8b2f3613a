package lsp

import (
	"bytes"
	"context"
	"encoding/json"

	"go.uber.org/zap"
)

// initialized handles the initialized notification: off the read loop
// (pulling configuration is a request to the client, whose answer the
// read loop must be free to read), the configuration is delivered, then
// the engine is told.
func (s *lspServer) initialized(ctx context.Context) error {
	s.requests.Add(1)
	go func() {
		defer s.requests.Done()
		defer s.recoverTo("initialized", func(err error) { s.log.Error("initialized", zap.Error(err)) })
		if s.client.capabilities().configuration {
			s.pullConfiguration(ctx)
		}
		s.engine.Initialized(ctx)
	}()
	return nil
}

// pullConfiguration asks the client for the "torchlsp" section and hands
// it to the engine. Deliveries are serialised; each pull reads the
// client's current settings, so the last delivery is always current.
func (s *lspServer) pullConfiguration(ctx context.Context) {
	s.configMu.Lock()
	defer s.configMu.Unlock()
	settings, err := s.client.configuration(ctx)
	if err != nil {
		s.log.Warn("pulling configuration", zap.Error(err))
		return
	}
	// Null settings still reach the engine: it reads its files again
	// (a workspace torchlsp.toml may have been trusted since).
	s.engine.DidChangeConfiguration(ctx, settings)
}

// didChangeConfiguration handles workspace/didChangeConfiguration. Clients
// that support workspace/configuration are asked for the current section
// (VS Code often sends null settings); others push settings, from which
// the "torchlsp" section is taken when present.
func (s *lspServer) didChangeConfiguration(ctx context.Context, raw json.RawMessage) error {
	if s.client.capabilities().configuration {
		s.requests.Add(1)
		go func() {
			defer s.requests.Done()
			defer s.recoverTo("workspace/didChangeConfiguration", func(err error) { s.log.Error("configuration", zap.Error(err)) })
			s.pullConfiguration(ctx)
		}()
		return nil
	}
	var p struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return err
	}
	s.configMu.Lock()
	defer s.configMu.Unlock()
	s.engine.DidChangeConfiguration(ctx, torchlspSection(p.Settings))
	return nil
}

// torchlspSection returns settings["torchlsp"] when settings is an object
// holding that key, settings itself otherwise, and nil for null.
func torchlspSection(settings json.RawMessage) json.RawMessage {
	settings = bytes.TrimSpace(settings)
	if len(settings) == 0 || string(settings) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(settings, &obj) == nil {
		if section, ok := obj["torchlsp"]; ok {
			return section
		}
	}
	return settings
}
