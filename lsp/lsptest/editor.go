package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Position is an LSP position: 0-based line, UTF-16 code units.
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is an LSP range.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Location is an LSP location.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// Hover is an LSP hover result.
type Hover struct {
	Contents struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	} `json:"contents"`
	Range *Range `json:"range,omitempty"`
}

// InitializeResult is the part of the initialize reply tests look at.
type InitializeResult struct {
	Capabilities struct {
		TextDocumentSync   TextDocumentSync `json:"textDocumentSync"`
		HoverProvider      Provided         `json:"hoverProvider"`
		DefinitionProvider Provided         `json:"definitionProvider"`
	} `json:"capabilities"`
	ServerInfo *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

// TextDocumentSync is a server's textDocumentSync capability, which the
// LSP lets be an object or, the older form, a TextDocumentSyncKind number
// (open and close notifications implied).
type TextDocumentSync struct {
	OpenClose bool `json:"openClose"`
	Change    int  `json:"change"`
	Save      *struct {
		IncludeText bool `json:"includeText"`
	} `json:"save"`
}

func (s *TextDocumentSync) UnmarshalJSON(b []byte) error {
	var kind int
	if err := json.Unmarshal(b, &kind); err == nil {
		*s = TextDocumentSync{OpenClose: true, Change: kind}
		return nil
	}
	type plain TextDocumentSync
	return json.Unmarshal(b, (*plain)(s))
}

// Provided is a capability the LSP lets be a boolean or an options
// object; an object means the server provides it.
type Provided bool

func (p *Provided) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case bool:
		*p = Provided(v)
	case map[string]any:
		*p = true
	case nil:
		*p = false
	default:
		return fmt.Errorf("capability is %T, want a boolean or an object", v)
	}
	return nil
}

// FileURI returns the file URI of an absolute path.
func FileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

func workspaceFolders(dir string) []map[string]string {
	return []map[string]string{{"uri": FileURI(dir), "name": filepath.Base(dir)}}
}

// InitializeParams returns the initialize params the client's Options
// describe.
func (c *Client) InitializeParams() map[string]any {
	name := c.opts.ClientName
	if name == "" {
		name = "lsptest"
	}
	formats := c.opts.HoverFormats
	if formats == nil {
		formats = []string{"markdown", "plaintext"}
	}
	p := map[string]any{
		"processId":  nil,
		"clientInfo": map[string]string{"name": name, "version": "0"},
		"rootUri":    nil,
		"capabilities": map[string]any{
			"window": map[string]any{
				"workDoneProgress": c.opts.WorkDoneProgress,
				"showDocument":     map[string]bool{"support": c.opts.ShowDocument},
			},
			"workspace": map[string]any{
				"configuration":          c.opts.Configuration,
				"workspaceFolders":       c.opts.RootDir != "",
				"didChangeConfiguration": map[string]bool{"dynamicRegistration": false},
			},
			"textDocument": map[string]any{
				"hover":              map[string]any{"contentFormat": formats},
				"synchronization":    map[string]any{"didSave": true},
				"definition":         map[string]bool{"linkSupport": false},
				"publishDiagnostics": map[string]bool{"relatedInformation": c.opts.RelatedInformation},
			},
		},
	}
	if c.opts.Notifications != nil {
		p["capabilities"].(map[string]any)["experimental"] = map[string]any{
			"torchlsp": map[string]any{"notifications": c.opts.Notifications},
		}
	}
	if c.opts.ProcessID != 0 {
		p["processId"] = c.opts.ProcessID
	}
	if c.opts.RootDir != "" {
		p["rootUri"] = FileURI(c.opts.RootDir)
		p["rootPath"] = c.opts.RootDir
		p["workspaceFolders"] = workspaceFolders(c.opts.RootDir)
	}
	if c.opts.InitializationOptions != nil {
		p["initializationOptions"] = c.opts.InitializationOptions
	}
	return p
}

// Initialize sends initialize and waits for the reply.
func (c *Client) Initialize(ctx context.Context) (*InitializeResult, error) {
	var res InitializeResult
	if err := c.Call(ctx, "initialize", c.InitializeParams(), &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Initialized sends the initialized notification.
func (c *Client) Initialized() error { return c.Notify("initialized", map[string]any{}) }

// Handshake sends initialize and initialized.
func (c *Client) Handshake(ctx context.Context) (*InitializeResult, error) {
	res, err := c.Initialize(ctx)
	if err != nil {
		return nil, err
	}
	return res, c.Initialized()
}

// DidOpen opens a document with version 1.
func (c *Client) DidOpen(uri, languageID, text string) error {
	return c.Notify("textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": languageID, "version": 1, "text": text},
	})
}

// Change is one content change; a nil Range replaces the whole text.
type Change struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

// DidChange sends changes making the given version of uri.
func (c *Client) DidChange(uri string, version int32, changes ...Change) error {
	return c.Notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": version},
		"contentChanges": changes,
	})
}

// DidClose closes a document.
func (c *Client) DidClose(uri string) error {
	return c.Notify("textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": uri}})
}

// DidSave reports a document saved.
func (c *Client) DidSave(uri string) error {
	return c.Notify("textDocument/didSave", map[string]any{"textDocument": map[string]string{"uri": uri}})
}

// DidChangeConfiguration sends settings (raw JSON, may be null).
func (c *Client) DidChangeConfiguration(settings json.RawMessage) error {
	return c.Notify("workspace/didChangeConfiguration", map[string]any{"settings": settings})
}

func positionParams(uri string, line, character uint32) map[string]any {
	return map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"position":     Position{Line: line, Character: character},
	}
}

// StartHover sends a hover request without waiting, so it can be
// cancelled.
func (c *Client) StartHover(uri string, line, character uint32) (*Pending, error) {
	return c.Start("textDocument/hover", positionParams(uri, line, character))
}

// Hover requests a hover; nil means the server had nothing to show.
func (c *Client) Hover(ctx context.Context, uri string, line, character uint32) (*Hover, error) {
	var h *Hover
	if err := c.Call(ctx, "textDocument/hover", positionParams(uri, line, character), &h); err != nil {
		return nil, err
	}
	return h, nil
}

// Definition requests the definition locations.
func (c *Client) Definition(ctx context.Context, uri string, line, character uint32) ([]Location, error) {
	var locs []Location
	if err := c.Call(ctx, "textDocument/definition", positionParams(uri, line, character), &locs); err != nil {
		return nil, err
	}
	return locs, nil
}

// Shutdown sends shutdown and waits for the reply.
func (c *Client) Shutdown(ctx context.Context) error { return c.Call(ctx, "shutdown", nil, nil) }

// Exit sends the exit notification.
func (c *Client) Exit() error { return c.Notify("exit", nil) }

// Message is a window/showMessage or window/logMessage.
type Message struct {
	Type    int    `json:"type"`
	Message string `json:"message"`
}

// AwaitMessage waits for a window/showMessage (or, when log is set,
// window/logMessage) containing substr.
func (c *Client) AwaitMessage(ctx context.Context, log bool, substr string) (Message, error) {
	exp := ShownMessage(substr)
	if log {
		exp = LoggedMessage(substr)
	}
	var msg Message
	ev, err := c.AwaitAll(ctx, exp)
	if err != nil {
		return msg, err
	}
	return msg, ev[0].Decode(&msg)
}

// ProgressValue is the value of a $/progress notification.
type ProgressValue struct {
	Kind        string  `json:"kind"`
	Title       string  `json:"title"`
	Cancellable bool    `json:"cancellable"`
	Message     string  `json:"message"`
	Percentage  *uint32 `json:"percentage"`
}

type progressParams struct {
	Token json.RawMessage `json:"token"`
	Value ProgressValue   `json:"value"`
}

// Progress is the life of one work-done progress token as seen so far.
type Progress struct {
	Token  string // the token's JSON
	Title  string
	Values []ProgressValue // begin, reports, end
}

// Progresses returns the work-done progress seen so far, in order of begin.
func (c *Client) Progresses() []Progress {
	var out []Progress
	index := make(map[string]int)
	for _, e := range c.Events() {
		if e.Method != "$/progress" {
			continue
		}
		var p progressParams
		if e.Decode(&p) != nil {
			continue
		}
		tok := string(p.Token)
		i, ok := index[tok]
		if !ok {
			i = len(out)
			index[tok] = i
			out = append(out, Progress{Token: tok})
		}
		if p.Value.Kind == "begin" {
			out[i].Title = p.Value.Title
		}
		out[i].Values = append(out[i].Values, p.Value)
	}
	return out
}

// AwaitProgressBegin waits for the begin of a progress titled title and
// returns its token (as JSON).
func (c *Client) AwaitProgressBegin(ctx context.Context, title string) (string, error) {
	var token string
	_, err := c.Await(ctx, func(e Event) bool {
		var p progressParams
		if e.Method != "$/progress" || e.Decode(&p) != nil {
			return false
		}
		if p.Value.Kind == "begin" && p.Value.Title == title {
			token = string(p.Token)
			return true
		}
		return false
	})
	return token, err
}

// AwaitProgressEnd waits for the end of the progress titled title and
// returns all its values.
func (c *Client) AwaitProgressEnd(ctx context.Context, title string) (Progress, error) {
	token, err := c.AwaitProgressBegin(ctx, title)
	if err != nil {
		return Progress{}, err
	}
	_, err = c.Await(ctx, func(e Event) bool {
		var p progressParams
		return e.Method == "$/progress" && e.Decode(&p) == nil && string(p.Token) == token && p.Value.Kind == "end"
	})
	if err != nil {
		return Progress{}, err
	}
	for _, p := range c.Progresses() {
		if p.Token == token {
			return p, nil
		}
	}
	return Progress{}, fmt.Errorf("progress %s vanished", token)
}

// CancelProgress sends window/workDoneProgress/cancel for a token (as
// JSON, as AwaitProgressBegin returns it).
func (c *Client) CancelProgress(token string) error {
	return c.Notify("window/workDoneProgress/cancel", map[string]json.RawMessage{"token": json.RawMessage(token)})
}

// Diagnostics is a textDocument/publishDiagnostics.
type Diagnostics struct {
	URI         string       `json:"uri"`
	Version     int32        `json:"version"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// Diagnostic is one published diagnostic.
type Diagnostic struct {
	Range              Range               `json:"range"`
	Severity           int                 `json:"severity"`
	Code               Code                `json:"code"`
	Source             string              `json:"source"`
	Message            string              `json:"message"`
	RelatedInformation []RelatedDiagnostic `json:"relatedInformation"`
}

// RelatedDiagnostic is a diagnostic's related information.
type RelatedDiagnostic struct {
	Location Location `json:"location"`
	Message  string   `json:"message"`
}

// Code is a diagnostic's code, which LSP allows to be a number or a
// string; numbers are kept as their decimal text.
type Code string

// UnmarshalJSON accepts a string, a number or null.
func (c *Code) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = Code(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("diagnostic code %s: %w", b, err)
	}
	*c = Code(n.String())
	return nil
}

// Has reports whether a diagnostic's code starts with prefix.
func (d Diagnostics) Has(prefix string) bool {
	for _, x := range d.Diagnostics {
		if strings.HasPrefix(string(x.Code), prefix) {
			return true
		}
	}
	return false
}

// AwaitDiagnostics waits for diagnostics published for uri.
func (c *Client) AwaitDiagnostics(ctx context.Context, uri string) (Diagnostics, error) {
	var d Diagnostics
	ev, err := c.AwaitAll(ctx, DiagnosticsAt(uri, 0, nil))
	if err != nil {
		return d, err
	}
	return d, ev[0].Decode(&d)
}

// Process is a language server running as a subprocess.
type Process struct {
	Cmd *exec.Cmd
	*Client

	waitOnce sync.Once
	waitErr  error
}

// StartProcess starts cmd and connects a client to its stdin and stdout.
// Its stderr is left as cmd has it. Closing the client closes the
// process's stdin, as an editor closing its pipe does; its stdout is read
// until the process ends.
func StartProcess(cmd *exec.Cmd, opts Options) (*Process, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	return &Process{Cmd: cmd, Client: New(stdinCloser{stdout, stdin}, opts)}, nil
}

// Wait waits for the process to exit and returns its exit code.
func (p *Process) Wait() (int, error) {
	p.waitOnce.Do(func() { p.waitErr = p.Cmd.Wait() })
	if p.Cmd.ProcessState != nil {
		return p.Cmd.ProcessState.ExitCode(), nil
	}
	return -1, p.waitErr
}
