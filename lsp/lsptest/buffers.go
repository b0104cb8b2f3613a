package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Editor is the fake editor: a Client plus the buffers it has open, each
// with its text and version, so that edits, positions by needle and
// version-matched diagnostics need no bookkeeping in tests. It returns
// errors; Env wraps it for tests and fails them instead.
type Editor struct {
	*Client
	// Root is the workspace folder that relative file names are in.
	Root string

	mu      sync.Mutex // guards buffers
	buffers map[string]*buffer
}

type buffer struct {
	text    string
	version int32
}

// NewEditor makes an editor on c for the workspace folder root.
func NewEditor(c *Client, root string) *Editor {
	return &Editor{Client: c, Root: root, buffers: make(map[string]*buffer)}
}

// URI returns the URI of a file named relative to Root (or absolute).
func (e *Editor) URI(name string) string {
	if !filepath.IsAbs(name) {
		name = filepath.Join(e.Root, name)
	}
	return FileURI(name)
}

// OpenFile opens a file from disk, named relative to Root, and returns
// its URI.
func (e *Editor) OpenFile(name string) (string, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.Root, name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", name, err)
	}
	uri := FileURI(path)
	return uri, e.OpenBuffer(uri, string(data))
}

// OpenBuffer opens a buffer with text at version 1; uri may be any
// scheme (untitled:…).
func (e *Editor) OpenBuffer(uri, text string) error {
	e.mu.Lock()
	e.buffers[uri] = &buffer{text: text, version: 1}
	e.mu.Unlock()
	if err := e.DidOpen(uri, "python", text); err != nil {
		return fmt.Errorf("open %s: %w", uri, err)
	}
	return nil
}

// EditBuffer replaces a buffer's whole text, as a new version, and
// returns that version.
func (e *Editor) EditBuffer(uri, text string) (int32, error) {
	e.mu.Lock()
	b, ok := e.buffers[uri]
	if !ok {
		e.mu.Unlock()
		return 0, fmt.Errorf("edit %s: buffer not open", uri)
	}
	b.version++
	b.text = text
	version := b.version
	// Sent under the lock: versions reach the server in order.
	err := e.DidChange(uri, version, Change{Text: text})
	e.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("edit %s: %w", uri, err)
	}
	return version, nil
}

// ApplyEdits applies LSP text edits to a buffer as one new version.
func (e *Editor) ApplyEdits(uri string, edits []TextEdit) (int32, error) {
	text, ok := e.Text(uri)
	if !ok {
		return 0, fmt.Errorf("apply edits to %s: buffer not open", uri)
	}
	next, err := ApplyEdits(text, edits)
	if err != nil {
		return 0, fmt.Errorf("apply edits to %s: %w", uri, err)
	}
	return e.EditBuffer(uri, next)
}

// CloseBuffer closes a buffer.
func (e *Editor) CloseBuffer(uri string) error {
	e.mu.Lock()
	delete(e.buffers, uri)
	e.mu.Unlock()
	return e.DidClose(uri)
}

// Text returns a buffer's text.
func (e *Editor) Text(uri string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.buffers[uri]
	if !ok {
		return "", false
	}
	return b.text, true
}

// Version returns a buffer's version, 0 when it is not open.
func (e *Editor) Version(uri string) int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.buffers[uri]; ok {
		return b.version
	}
	return 0
}

// Pos returns the position of byte off within the n-th (0-based)
// occurrence of needle in a buffer.
func (e *Editor) Pos(uri, needle string, n, off int) (Position, error) {
	text, ok := e.Text(uri)
	if !ok {
		return Position{}, fmt.Errorf("position in %s: buffer not open", uri)
	}
	line, col, err := Find(text, needle, n, off)
	if err != nil {
		return Position{}, fmt.Errorf("position in %s: %w", uri, err)
	}
	return Position{Line: line, Character: col}, nil
}

// TextEdit is an LSP text edit.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// CodeAction is an LSP code action, as torchlsp sends them.
type CodeAction struct {
	Title       string       `json:"title"`
	Kind        string       `json:"kind"`
	IsPreferred bool         `json:"isPreferred"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	Edit        *struct {
		Changes map[string][]TextEdit `json:"changes"`
	} `json:"edit"`
	Command *struct {
		Title     string            `json:"title"`
		Command   string            `json:"command"`
		Arguments []json.RawMessage `json:"arguments"`
	} `json:"command"`
}

// CodeActions requests the code actions at rng.
func (c *Client) CodeActions(ctx context.Context, uri string, rng Range) ([]CodeAction, error) {
	return c.CodeActionsOnly(ctx, uri, rng, nil)
}

// CodeActionsOnly requests the code actions of the kinds in only
// (context.only; nil asks for every kind).
func (c *Client) CodeActionsOnly(ctx context.Context, uri string, rng Range, only []string) ([]CodeAction, error) {
	cctx := map[string]any{"diagnostics": []any{}}
	if only != nil {
		cctx["only"] = only
	}
	var actions []CodeAction
	err := c.Call(ctx, "textDocument/codeAction", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"range":        rng,
		"context":      cctx,
	}, &actions)
	return actions, err
}

// References requests the references of the name at a position.
func (c *Client) References(ctx context.Context, uri string, pos Position, includeDeclaration bool) ([]Location, error) {
	var locs []Location
	err := c.Call(ctx, "textDocument/references", map[string]any{
		"textDocument": map[string]string{"uri": uri},
		"position":     pos,
		"context":      map[string]bool{"includeDeclaration": includeDeclaration},
	}, &locs)
	return locs, err
}

// ExecuteCommand runs a command on the server and decodes its result.
func (c *Client) ExecuteCommand(ctx context.Context, command string, args []any, result any) error {
	return c.Call(ctx, "workspace/executeCommand", map[string]any{"command": command, "arguments": args}, result)
}

// ApplyEdits applies non-overlapping LSP edits (UTF-16 positions) to text.
func ApplyEdits(text string, edits []TextEdit) (string, error) {
	type span struct {
		start, end int
		newText    string
	}
	spans := make([]span, 0, len(edits))
	for _, ed := range edits {
		start, err := Offset(text, ed.Range.Start)
		if err != nil {
			return "", err
		}
		end, err := Offset(text, ed.Range.End)
		if err != nil {
			return "", err
		}
		if end < start {
			return "", fmt.Errorf("edit range %+v ends before it starts", ed.Range)
		}
		spans = append(spans, span{start, end, ed.NewText})
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	at := 0
	for _, s := range spans {
		if s.start < at {
			return "", fmt.Errorf("edits overlap at byte %d", s.start)
		}
		b.WriteString(text[at:s.start])
		b.WriteString(s.newText)
		at = s.end
	}
	b.WriteString(text[at:])
	return b.String(), nil
}

// Offset converts an LSP position (UTF-16 column) in text to a byte
// offset. A column past the end of its line is an error.
func Offset(text string, p Position) (int, error) {
	off := 0
	for line := uint32(0); line < p.Line; line++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("position %d:%d: the text has %d lines", p.Line, p.Character, line+1)
		}
		off += i + 1
	}
	units := uint32(0)
	for units < p.Character {
		if off >= len(text) || text[off] == '\n' {
			return 0, fmt.Errorf("position %d:%d is past the end of its line", p.Line, p.Character)
		}
		r, size := utf8.DecodeRuneInString(text[off:])
		units += uint32(utf16.RuneLen(r))
		off += size
	}
	if units != p.Character {
		return 0, fmt.Errorf("position %d:%d splits a character", p.Line, p.Character)
	}
	return off, nil
}
