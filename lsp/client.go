package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/source"
)

// clientCaps is the part of the client's capabilities the server acts on.
type clientCaps struct {
	workDoneProgress   bool
	configuration      bool
	showDocument       bool
	plainTextHover     bool // the client prefers plain-text hovers
	relatedInformation bool // diagnostics' related information is shown
	status             bool // the client handles torchlsp/status
	site               bool // the client handles torchlsp/site
}

// snapshots finds the open documents' texts, to convert positions in them.
type snapshots interface {
	Snapshot(uri string) *server.Snapshot
	SnapshotByPath(path string) *server.Snapshot
}

// Client is the server's handle on the connected editor. It implements
// server.Notifier. It is safe for concurrent use.
type Client struct {
	conn  jsonrpc2.Conn
	log   *zap.Logger
	docs  snapshots
	files *fileMappers

	ctx   context.Context // ends with the connection
	ready chan struct{}   // closed once the initialize reply is sent
	caps  atomic.Pointer[clientCaps]

	seq      atomic.Int64
	mu       sync.Mutex           // guards progress and closed
	progress map[string]*workDone // by token
	closed   bool                 // no more progress workers
	wg       sync.WaitGroup       // progress workers
}

var _ server.Notifier = (*Client)(nil)

func newClient(ctx context.Context, conn jsonrpc2.Conn, log *zap.Logger, docs snapshots, files *fileMappers) *Client {
	c := &Client{
		conn: conn, log: log, docs: docs, files: files,
		ctx: ctx, ready: make(chan struct{}), progress: make(map[string]*workDone),
	}
	c.caps.Store(&clientCaps{})
	return c
}

func (c *Client) capabilities() clientCaps { return *c.caps.Load() }

// Capabilities says what the editor shows: diagnostics always; questions
// always (window/showMessageRequest is part of the base protocol);
// documents when it offered window/showDocument; the status item and the
// site when it announced torchlsp/status and torchlsp/site
// (announcedNotifications): a client that does not know a method may
// treat it as an error.
func (c *Client) Capabilities() server.Capabilities {
	caps := c.capabilities()
	return server.Capabilities{Status: caps.status, Diagnostics: true, ShowDocument: caps.showDocument, Site: caps.site, Confirm: true}
}

// notify sends a notification, even when the caller's context is already
// cancelled: what the engine has to say should not be lost with it.
func (c *Client) notify(ctx context.Context, method string, params any) error {
	if err := c.conn.Notify(context.WithoutCancel(ctx), method, params); err != nil {
		c.log.Debug("notification not sent", zap.String("method", method), zap.Error(err))
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// ShowMessage shows msg to the user (window/showMessage).
func (c *Client) ShowMessage(ctx context.Context, typ server.MessageType, msg string) {
	_ = c.notify(ctx, "window/showMessage", &protocol.ShowMessageParams{Type: protocol.MessageType(typ), Message: msg})
}

// LogMessage writes msg to the client's log (window/logMessage).
func (c *Client) LogMessage(ctx context.Context, typ server.MessageType, msg string) {
	_ = c.notify(ctx, "window/logMessage", &protocol.LogMessageParams{Type: protocol.MessageType(typ), Message: msg})
}

// PublishDiagnostics replaces the diagnostics shown for a document, with
// ranges converted against the very version they were computed on.
func (c *Client) PublishDiagnostics(ctx context.Context, doc *server.Snapshot, diags []server.Diagnostic) error {
	out := make([]protocol.Diagnostic, 0, len(diags))
	for _, d := range diags {
		pd, err := c.convertDiagnostic(doc.Mapper(), d)
		if err != nil {
			return fmt.Errorf("publishing diagnostics for %s: %w", doc.URI(), err)
		}
		out = append(out, pd)
	}
	return c.notify(ctx, "textDocument/publishDiagnostics", &protocol.PublishDiagnosticsParams{
		URI: protocol.DocumentURI(doc.URI()), Version: uint32(max(doc.Version(), 0)), Diagnostics: out,
	})
}

// siteMethod is torchlsp's notification of the default target's site.
const siteMethod = "torchlsp/site"

// Site tells the editor where the default target's site-packages view is
// (torchlsp/site), so that it can give it to its Python server.
func (c *Client) Site(ctx context.Context, s server.SiteInfo) {
	if c.capabilities().site {
		_ = c.notify(ctx, siteMethod, s)
	}
}

// convertDiagnostic converts a diagnostic of the document m maps.
func (c *Client) convertDiagnostic(m *source.Mapper, d server.Diagnostic) (protocol.Diagnostic, error) {
	r, err := toLSPRange(m, d.Range)
	if err != nil {
		return protocol.Diagnostic{}, err
	}
	pd := protocol.Diagnostic{
		Range: r, Severity: protocol.DiagnosticSeverity(d.Severity), Source: d.Source, Message: d.Message,
	}
	if d.Code != "" {
		pd.Code = d.Code
	}
	if !c.capabilities().relatedInformation {
		pd.Message = foldRelated(d.Message, d.Related)
		return pd, nil
	}
	for _, rel := range d.Related {
		loc, err := c.lspLocation(rel.Location)
		if err != nil {
			continue
		}
		pd.RelatedInformation = append(pd.RelatedInformation, protocol.DiagnosticRelatedInformation{Location: loc, Message: rel.Message})
	}
	return pd, nil
}

// foldRelated appends a diagnostic's related information to its message,
// one line each, for a client that does not show related information.
// A related message names its place already (the engine writes
// "torch/_inductor/config.py:1514: …"); one without a message gets its
// file and line.
func foldRelated(msg string, related []server.RelatedInfo) string {
	if len(related) == 0 {
		return msg
	}
	var b strings.Builder
	b.WriteString(msg)
	for _, rel := range related {
		b.WriteString("\n")
		if rel.Message != "" {
			b.WriteString(rel.Message)
		} else {
			fmt.Fprintf(&b, "%s:%d", rel.Location.Path, rel.Location.Range.Start.Line+1)
		}
	}
	return b.String()
}

// documentLocation converts a range of an open document (or a file) to
// LSP units.
func (c *Client) documentLocation(_ context.Context, docURI string, r server.Range) (protocol.Location, error) {
	m, err := c.mapperFor(docURI)
	if err != nil {
		return protocol.Location{}, err
	}
	lr, err := toLSPRange(m, r)
	if err != nil {
		return protocol.Location{}, err
	}
	return protocol.Location{URI: protocol.DocumentURI(docURI), Range: lr}, nil
}

// lspLocation converts a location in a local file to LSP units.
func (c *Client) lspLocation(loc server.Location) (protocol.Location, error) {
	m, err := c.mapperForPath(loc.Path)
	if err != nil {
		return protocol.Location{}, err
	}
	r, err := toLSPRange(m, loc.Range)
	if err != nil {
		return protocol.Location{}, err
	}
	return protocol.Location{URI: uri.File(loc.Path), Range: r}, nil
}

// showDocumentParams is window/showDocument's params. go.lsp.dev/protocol
// declares the method on the wrong side, so it is sent as a raw call.
type showDocumentParams struct {
	URI       string          `json:"uri"`
	External  bool            `json:"external,omitempty"`
	TakeFocus bool            `json:"takeFocus,omitempty"`
	Selection *protocol.Range `json:"selection,omitempty"`
}

// ShowDocument asks the client to open loc's file and select its range
// (window/showDocument). It reports whether the client did; clients
// without the capability get an error.
func (c *Client) ShowDocument(ctx context.Context, loc server.Location, takeFocus bool) (bool, error) {
	if !c.capabilities().showDocument {
		return false, fmt.Errorf("show document %s: client does not support window/showDocument", loc.Path)
	}
	p := showDocumentParams{URI: string(uri.File(loc.Path)), TakeFocus: takeFocus}
	if m, err := c.files.get(loc.Path); err == nil {
		if r, err := toLSPRange(m, loc.Range); err == nil {
			p.Selection = &r
		}
	}
	var result struct {
		Success bool `json:"success"`
	}
	if _, err := c.conn.Call(ctx, "window/showDocument", &p, &result); err != nil {
		return false, fmt.Errorf("show document %s: %w", loc.Path, err)
	}
	return result.Success, nil
}

// confirmCancel is the way out offered beside Confirm's yes.
const confirmCancel = "Cancel"

// Confirm asks the user a question with window/showMessageRequest,
// offering yes and Cancel, and reports whether they chose yes; a
// dismissed question is a no.
func (c *Client) Confirm(ctx context.Context, question, yes string) (bool, error) {
	p := protocol.ShowMessageRequestParams{
		Type:    protocol.MessageTypeWarning,
		Message: question,
		Actions: []protocol.MessageActionItem{{Title: yes}, {Title: confirmCancel}},
	}
	var chosen *protocol.MessageActionItem
	if _, err := c.conn.Call(ctx, "window/showMessageRequest", &p, &chosen); err != nil {
		return false, fmt.Errorf("window/showMessageRequest: %w", err)
	}
	return chosen != nil && chosen.Title == yes, nil
}

// Refresh sends one of the workspace/*/refresh requests (for example
// "workspace/semanticTokens/refresh"), which go.lsp.dev/protocol declares
// on the wrong side.
func (c *Client) Refresh(ctx context.Context, method string) error {
	if _, err := c.conn.Call(ctx, method, nil, nil); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// mapperFor returns a Mapper for a document: the open version if any,
// else the file on disk.
func (c *Client) mapperFor(docURI string) (*source.Mapper, error) {
	if doc := c.docs.Snapshot(docURI); doc != nil {
		return doc.Mapper(), nil
	}
	path, ok := source.FilePath(docURI)
	if !ok {
		return nil, fmt.Errorf("document %s is not open", docURI)
	}
	return c.files.get(path)
}

// mapperForPath returns a Mapper for a local file: the open document's
// text when the editor has it open (it may be unsaved), else the file.
func (c *Client) mapperForPath(path string) (*source.Mapper, error) {
	if doc := c.docs.SnapshotByPath(path); doc != nil {
		return doc.Mapper(), nil
	}
	return c.files.get(path)
}

// configuration pulls the "torchlsp" section with workspace/configuration.
// It returns nil when the client has none.
func (c *Client) configuration(ctx context.Context) (json.RawMessage, error) {
	params := protocol.ConfigurationParams{Items: []protocol.ConfigurationItem{{Section: "torchlsp"}}}
	var result []json.RawMessage
	if _, err := c.conn.Call(ctx, "workspace/configuration", &params, &result); err != nil {
		return nil, fmt.Errorf("workspace/configuration: %w", err)
	}
	if len(result) == 0 || string(result[0]) == "null" {
		return nil, nil
	}
	return result[0], nil
}
