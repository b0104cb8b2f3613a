package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/protocol"

	"github.com/torchlsp/torchlsp/server"
)

type codeActionParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Range   protocol.Range `json:"range"`
	Context struct {
		Only []string `json:"only"`
	} `json:"context"`
}

// codeAction is sent raw: go.lsp.dev/protocol v0.12.0's CodeAction lacks
// isPreferred.
type codeAction struct {
	Title       string                `json:"title"`
	Kind        string                `json:"kind,omitempty"`
	Diagnostics []protocol.Diagnostic `json:"diagnostics,omitempty"`
	IsPreferred bool                  `json:"isPreferred,omitempty"`
	Edit        *workspaceEdit        `json:"edit,omitempty"`
	Command     *protocol.Command     `json:"command,omitempty"`
}

type workspaceEdit struct {
	Changes map[string][]protocol.TextEdit `json:"changes"`
}

func (s *lspServer) codeAction(_ context.Context, raw json.RawMessage) (callRunner, error) {
	var p codeActionParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	m, err := s.client.mapperFor(p.TextDocument.URI)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	rng, err := m.FromLSPRange(p.Range)
	if err != nil {
		return nil, invalidParams("%s: %v", p.TextDocument.URI, err)
	}
	return func(ctx context.Context) (any, error) {
		actions, err := s.engine.CodeActions(ctx, p.TextDocument.URI, rng, p.Context.Only)
		if err != nil {
			return nil, err
		}
		out := make([]codeAction, 0, len(actions))
		for _, a := range actions {
			ca, err := s.convertAction(m, a)
			if err != nil {
				s.client.LogMessage(ctx, server.MessageWarning, fmt.Sprintf("code action %q dropped: %v", a.Title, err))
				continue
			}
			out = append(out, ca)
		}
		return out, nil
	}, nil
}

func (s *lspServer) convertAction(m *Mapper, a server.CodeAction) (codeAction, error) {
	ca := codeAction{Title: a.Title, Kind: a.Kind, IsPreferred: a.Preferred}
	if len(a.Edits) > 0 {
		ca.Edit = &workspaceEdit{Changes: map[string][]protocol.TextEdit{}}
		for docURI, edits := range a.Edits {
			em, err := s.client.mapperFor(docURI)
			if err != nil {
				return ca, err
			}
			for _, e := range edits {
				r, err := em.ToLSPRange(e.Range)
				if err != nil {
					return ca, err
				}
				ca.Edit.Changes[docURI] = append(ca.Edit.Changes[docURI], protocol.TextEdit{Range: r, NewText: e.NewText})
			}
		}
	}
	for _, d := range a.Diagnostics {
		if pd, err := s.client.convertDiagnostic(m, d); err == nil {
			ca.Diagnostics = append(ca.Diagnostics, pd)
		}
	}
	if a.Command != nil {
		ca.Command = &protocol.Command{Title: a.Command.Title, Command: a.Command.Name, Arguments: a.Command.Arguments}
	}
	return ca, nil
}
