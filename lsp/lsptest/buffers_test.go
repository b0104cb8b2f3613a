package lsptest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestApplyEditsUTF16(t *testing.T) {
	t.Parallel()
	text := "x = \"𝛼é\"; y = torch.nn\nz\n"
	tests := []struct {
		name    string
		edits   []TextEdit
		want    string
		wantErr string
	}{
		{"after a surrogate pair", []TextEdit{{Range: Range{Start: Position{0, 15}, End: Position{0, 23}}, NewText: "F"}}, "x = \"𝛼é\"; y = F\nz\n", ""},
		{"two, given out of order", []TextEdit{
			{Range: Range{Start: Position{1, 0}, End: Position{1, 1}}, NewText: "w"},
			{Range: Range{Start: Position{0, 0}, End: Position{0, 1}}, NewText: "v"},
		}, "v = \"𝛼é\"; y = torch.nn\nw\n", ""},
		{"insert at the end of a line", []TextEdit{{Range: Range{Start: Position{1, 1}, End: Position{1, 1}}, NewText: "!"}}, "x = \"𝛼é\"; y = torch.nn\nz!\n", ""},
		{"inside a surrogate pair", []TextEdit{{Range: Range{Start: Position{0, 6}, End: Position{0, 6}}}}, "", "splits a character"},
		{"past the end of the line", []TextEdit{{Range: Range{Start: Position{1, 2}, End: Position{1, 2}}}}, "", "past the end"},
		{"past the last line", []TextEdit{{Range: Range{Start: Position{5, 0}, End: Position{5, 0}}}}, "", "lines"},
		{"overlapping", []TextEdit{
			{Range: Range{Start: Position{0, 0}, End: Position{0, 3}}},
			{Range: Range{Start: Position{0, 2}, End: Position{0, 4}}},
		}, "", "overlap"},
	}
	for _, tt := range tests {
		got, err := ApplyEdits(text, tt.edits)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil || got != tt.want:
			t.Errorf("%s: ApplyEdits = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestEditorVersions: each edit is the buffer's next version, sent in
// order, and positions are found in the current text.
func TestEditorVersions(t *testing.T) {
	t.Parallel()
	c, p := newPair(t, Options{})
	ed := NewEditor(c, "/ws")
	if err := ed.OpenBuffer("untitled:a", "import torch\n"); err != nil {
		t.Fatal(err)
	}
	if m := p.read(t); m.Method != "textDocument/didOpen" || !strings.Contains(string(m.Params), `"version":1`) {
		t.Fatalf("open sent %s %s", m.Method, m.Params)
	}
	for want := int32(2); want <= 3; want++ {
		v, err := ed.EditBuffer("untitled:a", "import torch\ntorch.nn\n")
		if err != nil || v != want {
			t.Fatalf("EditBuffer = %d, %v; want version %d", v, err, want)
		}
		if m := p.read(t); m.Method != "textDocument/didChange" || !strings.Contains(string(m.Params), fmt.Sprintf(`"version":%d`, want)) {
			t.Fatalf("edit sent %s %s", m.Method, m.Params)
		}
	}
	if pos, err := ed.Pos("untitled:a", "torch.nn", 0, 6); err != nil || pos != (Position{1, 6}) {
		t.Errorf("Pos = %+v, %v", pos, err)
	}
	if _, err := ed.EditBuffer("untitled:none", ""); err == nil {
		t.Error("an edit of a buffer that is not open was sent")
	}
	if ed.URI("a.py") != "file:///ws/a.py" {
		t.Errorf("URI = %s", ed.URI("a.py"))
	}
}

// TestExpectations: a progress end matches only after its own begin,
// diagnostics only for their version, and AwaitAll waits for all.
func TestExpectations(t *testing.T) {
	t.Parallel()
	c, p := newPair(t, Options{})
	p.send(t, `{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"begin","title":"other"}}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"$/progress","params":{"token":2,"value":{"kind":"begin","title":"torchlsp: torch on x"}}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"end","message":"torch mirrored"}}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///a.py","version":1,"diagnostics":[{"code":"TL001 x","message":"m"}]}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///a.py","version":2,"diagnostics":[{"code":7,"message":"n"}]}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"$/progress","params":{"token":2,"value":{"kind":"end","message":"torch 1.0 mirrored"}}}`)
	p.send(t, `{"jsonrpc":"2.0","method":"torchlsp/status","params":{"target":"x","state":"ready"}}`)

	ctx := ctxFor(t)
	ev, err := c.AwaitAll(ctx,
		ProgressEnded("torchlsp: torch on x", "mirrored"),
		DiagnosticsAt("file:///a.py", 2, nil),
		StatusIs("x", "ready"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ev[0].Params), `"token":2`) {
		t.Errorf("progress end matched %s, want token 2's", ev[0].Params)
	}
	var d Diagnostics
	if err := ev[1].Decode(&d); err != nil || d.Version != 2 || d.Diagnostics[0].Code != "7" || d.Has("TL001") {
		t.Errorf("diagnostics matched %+v, %v; want version 2 with the numeric code 7", d, err)
	}
	first, err := c.AwaitAll(ctx, DiagnosticsAt("file:///a.py", 0, func(d Diagnostics) bool { return d.Has("TL001") }))
	if err != nil || !strings.Contains(string(first[0].Params), `"version":1`) {
		t.Errorf("diagnostics with TL001 = %s, %v", first[0].Params, err)
	}
}

// TestInitializeResultForms decodes the capability forms real servers
// send: pyright's numeric textDocumentSync and option objects.
func TestInitializeResultForms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body       string
		openClose, hover bool
		change           int
	}{
		{"object", `{"capabilities":{"textDocumentSync":{"openClose":true,"change":2},"hoverProvider":true}}`, true, true, 2},
		{"kind number", `{"capabilities":{"textDocumentSync":2,"hoverProvider":{"workDoneProgress":true}}}`, true, true, 2},
		{"none", `{"capabilities":{"hoverProvider":false}}`, false, false, 0},
	} {
		var r InitializeResult
		if err := json.Unmarshal([]byte(tt.body), &r); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		c := r.Capabilities
		if c.TextDocumentSync.OpenClose != tt.openClose || c.TextDocumentSync.Change != tt.change || bool(c.HoverProvider) != tt.hover {
			t.Errorf("%s: decoded %+v", tt.name, c)
		}
	}
	var r InitializeResult
	if err := json.Unmarshal([]byte(`{"capabilities":{"hoverProvider":"yes"}}`), &r); err == nil {
		t.Error("a string hoverProvider decoded without an error")
	}
}
