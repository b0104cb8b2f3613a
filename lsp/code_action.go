package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
	doc, err := s.snapshot(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	rng, err := fromLSPRange(doc.Mapper(), p.Range)
	if err != nil {
		return nil, invalidParams("%s: %v", p.TextDocument.URI, err)
	}
	return func(ctx context.Context) (any, error) {
		actions, err := s.engine.CodeActions(ctx, doc, rng, p.Context.Only)
		if err != nil {
			return nil, err
		}
		out := make([]codeAction, 0, len(actions))
		for _, a := range actions {
			if !kindWanted(p.Context.Only, a.Kind) {
				continue // the client asked for other kinds only
			}
			ca, err := s.convertAction(doc, a)
			if err != nil {
				s.client.LogMessage(ctx, server.MessageWarning, fmt.Sprintf("code action %q dropped: %v", a.Title, err))
				continue
			}
			out = append(out, ca)
		}
		return out, nil
	}, nil
}

// convertAction converts an action computed on doc; its edits of doc are
// converted against doc's text, which is the version they were made for.
func (s *lspServer) convertAction(doc *server.Snapshot, a server.CodeAction) (codeAction, error) {
	ca := codeAction{Title: a.Title, Kind: a.Kind, IsPreferred: a.Preferred}
	if len(a.Edits) > 0 {
		ca.Edit = &workspaceEdit{Changes: map[string][]protocol.TextEdit{}}
		for docURI, edits := range a.Edits {
			em := doc.Mapper()
			if docURI != doc.URI() {
				var err error
				if em, err = s.client.mapperFor(docURI); err != nil {
					return ca, err
				}
			}
			for _, e := range edits {
				r, err := toLSPRange(em, e.Range)
				if err != nil {
					return ca, err
				}
				ca.Edit.Changes[docURI] = append(ca.Edit.Changes[docURI], protocol.TextEdit{Range: r, NewText: e.NewText})
			}
		}
	}
	for _, d := range a.Diagnostics {
		if pd, err := s.client.convertDiagnostic(doc.Mapper(), d); err == nil {
			ca.Diagnostics = append(ca.Diagnostics, pd)
		}
	}
	if a.Command != nil {
		ca.Command = &protocol.Command{Title: a.Command.Title, Command: a.Command.Name, Arguments: a.Command.Arguments}
	}
	return ca, nil
}

// kindWanted reports whether a code action of kind answers a request
// whose context.only is only: kinds are hierarchical ("source" asks for
// "source.torchlsp.repro" too, and the empty kind for all), and no only
// asks for every kind.
func kindWanted(only []string, kind string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o == "" || kind == o || strings.HasPrefix(kind, o+".") {
			return true
		}
	}
	return false
}
