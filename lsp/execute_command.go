package lsp

import (
	"context"
	"encoding/json"
	"slices"

	"go.lsp.dev/jsonrpc2"
)

type executeCommandParams struct {
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments"`
}

func (s *lspServer) executeCommand(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p executeCommandParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if !slices.Contains(s.engine.Commands(), p.Command) {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "unknown command %q", p.Command)
	}
	return func(ctx context.Context) (any, error) {
		return s.engine.ExecuteCommand(ctx, p.Command, p.Arguments)
	}, nil
}
