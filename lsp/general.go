package lsp

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// initializeParams is the part of initialize's params the server reads.
// go.lsp.dev/protocol's InitializeParams is not used: its capability
// structs predate LSP 3.17, and one field of a newer client's capabilities
// with an unexpected shape would fail the whole request.
type initializeParams struct {
	ProcessID  *int `json:"processId"`
	ClientInfo *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"clientInfo"`
	RootPath              string          `json:"rootPath"`
	RootURI               string          `json:"rootUri"`
	InitializationOptions json.RawMessage `json:"initializationOptions"`
	WorkspaceFolders      []struct {
		URI string `json:"uri"`
	} `json:"workspaceFolders"`
	Capabilities struct {
		Window struct {
			WorkDoneProgress bool `json:"workDoneProgress"`
			ShowDocument     struct {
				Support bool `json:"support"`
			} `json:"showDocument"`
		} `json:"window"`
		Workspace struct {
			Configuration bool `json:"configuration"`
		} `json:"workspace"`
		TextDocument struct {
			Hover struct {
				ContentFormat []string `json:"contentFormat"`
			} `json:"hover"`
			PublishDiagnostics struct {
				RelatedInformation bool `json:"relatedInformation"`
			} `json:"publishDiagnostics"`
		} `json:"textDocument"`
		// Experimental is where a client announces torchlsp's own
		// notifications; its shape is read leniently (experimentalCaps).
		Experimental json.RawMessage `json:"experimental"`
	} `json:"capabilities"`
}

// initialize handles the initialize request on the read loop: nothing may
// be handled before its reply.
func (s *lspServer) initialize(ctx context.Context, reply replyFunc, raw json.RawMessage) {
	var p initializeParams
	if err := decodeParams(raw, &p); err != nil {
		reply(nil, err)
		return
	}
	notes := announcedNotifications(p.Capabilities.Experimental)
	caps := &clientCaps{
		workDoneProgress:   p.Capabilities.Window.WorkDoneProgress,
		configuration:      p.Capabilities.Workspace.Configuration,
		showDocument:       p.Capabilities.Window.ShowDocument.Support,
		plainTextHover:     !prefersMarkdown(p.Capabilities.TextDocument.Hover.ContentFormat),
		relatedInformation: p.Capabilities.TextDocument.PublishDiagnostics.RelatedInformation,
		status:             notes[statusMethod],
		site:               notes[siteMethod],
	}
	s.client.caps.Store(caps)

	ip := InitializeParams{Notifier: s.client}
	if len(p.InitializationOptions) > 0 && string(p.InitializationOptions) != "null" {
		ip.InitializationOptions = p.InitializationOptions
	}
	if p.ClientInfo != nil {
		ip.ClientName, ip.ClientVersion = p.ClientInfo.Name, p.ClientInfo.Version
	}
	if p.ProcessID != nil && *p.ProcessID > 0 {
		ip.ClientProcessID = *p.ProcessID
	}
	if dir, ok := source.FilePath(p.RootURI); ok {
		ip.RootDir = dir
	} else if p.RootURI == "" && p.RootPath != "" {
		ip.RootDir = p.RootPath
	}
	for _, f := range p.WorkspaceFolders {
		if dir, ok := source.FilePath(f.URI); ok {
			ip.WorkspaceFolders = append(ip.WorkspaceFolders, dir)
		}
	}
	if ip.RootDir == "" && len(ip.WorkspaceFolders) > 0 {
		ip.RootDir = ip.WorkspaceFolders[0]
	}

	if err := s.engine.Initialize(ctx, ip); err != nil {
		s.log.Error("initialize failed", zap.Error(err))
		reply(nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "initialize: %v", err))
		return
	}
	s.state.Store(stateInitialized)
	reply(&protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: &protocol.TextDocumentSyncOptions{
				OpenClose: true,
				Change:    protocol.TextDocumentSyncKindIncremental,
				Save:      &protocol.SaveOptions{},
			},
			HoverProvider:      true,
			DefinitionProvider: true,
			ReferencesProvider: true,
			// The places of a document that name what the cursor is on.
			DocumentHighlightProvider: true,
			CodeActionProvider: &protocol.CodeActionOptions{
				CodeActionKinds: []protocol.CodeActionKind{server.KindQuickFix, server.KindRepro, server.KindExplain},
			},
			ExecuteCommandProvider:  &protocol.ExecuteCommandOptions{Commands: commandNames()},
			ImplementationProvider:  true, // where torch defines a compiled op for the compiler stack
			DocumentSymbolProvider:  true,
			WorkspaceSymbolProvider: true,
			CallHierarchyProvider:   true,
			// Target paths in tracebacks and logs, to the mirror and the workspace.
			DocumentLinkProvider: &protocol.DocumentLinkOptions{},
		},
		ServerInfo: &protocol.ServerInfo{Name: "torchlsp", Version: s.opts.Version},
	}, nil)
	close(s.client.ready)
	if ip.ClientProcessID > 0 {
		s.watchClient(ip.ClientProcessID)
	}
	s.log.Info("initialized", zap.String("client", ip.ClientName), zap.String("root", ip.RootDir))
}

// prefersMarkdown reports whether the client would rather have markdown
// hovers: its contentFormat lists formats in order of preference, and one
// that names none is assumed to render markdown.
func prefersMarkdown(formats []string) bool {
	for _, f := range formats {
		switch f {
		case string(protocol.Markdown):
			return true
		case string(protocol.PlainText):
			return false
		}
	}
	return true
}

// announcedNotifications reads which of torchlsp's own notifications a
// client handles, from capabilities.experimental.torchlsp.notifications
// (a list of method names). Anything else there, of any shape, is
// ignored: it belongs to the client.
func announcedNotifications(experimental json.RawMessage) map[string]bool {
	var exp struct {
		Torchlsp struct {
			Notifications []string `json:"notifications"`
		} `json:"torchlsp"`
	}
	if len(experimental) == 0 || json.Unmarshal(experimental, &exp) != nil {
		return nil
	}
	out := make(map[string]bool, len(exp.Torchlsp.Notifications))
	for _, m := range exp.Torchlsp.Notifications {
		out[m] = true
	}
	return out
}

// shutdown marks the server shut down at once, so later requests are
// refused, and shuts the engine down off the read loop.
func (s *lspServer) shutdown(ctx context.Context) (callRunner, error) {
	s.state.Store(stateShutdown)
	return func(ctx context.Context) (any, error) {
		if err := s.shutdownEngine(ctx); err != nil {
			s.log.Warn("engine shutdown", zap.Error(err))
		}
		return nil, nil
	}, nil
}

// exit handles the exit notification: the exit code is 0 only after a
// shutdown request.
func (s *lspServer) exit() {
	s.exitOnce.Do(func() {
		if s.state.Load() == stateShutdown {
			s.exitCode.Store(0)
		}
		close(s.exited)
	})
}
