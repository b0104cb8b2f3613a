package lsp_test

import (
	"slices"
	"testing"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// highlightText puts two surrogate pairs (4 UTF-16 units, 8 bytes) before
// the second line's names: there positions on the wire and byte columns
// differ by 4.
const highlightText = "cfg = 1\nx = \"😀😀\"; y = cfg + cfg\ncfg = y\n"

// TestDocumentHighlightOnTheWire: the server advertises documentHighlight
// and answers it for the snapshot the position was converted against,
// every range converted to UTF-16 units and every kind (2 read, 3 write)
// as the protocol numbers it; a position on no name answers null.
func TestDocumentHighlightOnTheWire(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	c, _ := start(t, newTestEngine(), lsp.Options{Version: "test"}, lsptest.Options{})
	var init struct {
		Capabilities struct {
			DocumentHighlightProvider bool `json:"documentHighlightProvider"`
		} `json:"capabilities"`
	}
	if err := c.Call(ctx, "initialize", c.InitializeParams(), &init); err != nil {
		t.Fatal(err)
	}
	if !init.Capabilities.DocumentHighlightProvider {
		t.Error("documentHighlightProvider is not advertised")
	}
	if err := c.Initialized(); err != nil {
		t.Fatal(err)
	}
	uri := "file:///work/h.py"
	if err := c.DidOpen(uri, "python", highlightText); err != nil {
		t.Fatal(err)
	}
	type highlight struct {
		Range lsptest.Range `json:"range"`
		Kind  int           `json:"kind"`
	}
	at := func(line, char, end uint32) lsptest.Range {
		return lsptest.Range{Start: lsptest.Position{Line: line, Character: char}, End: lsptest.Position{Line: line, Character: end}}
	}
	cfg := []highlight{{at(0, 0, 3), 3}, {at(1, 16, 19), 2}, {at(1, 22, 25), 2}, {at(2, 0, 3), 3}}
	tests := []struct {
		name string
		pos  lsptest.Position
		want []highlight
	}{
		{"a name before the wide characters", lsptest.Position{Line: 0, Character: 1}, cfg},
		{"the same name after them", lsptest.Position{Line: 1, Character: 23}, cfg},
		{"another name", lsptest.Position{Line: 1, Character: 12}, []highlight{{at(1, 12, 13), 3}, {at(2, 6, 7), 2}}},
		{"no name", lsptest.Position{Line: 1, Character: 20}, nil},
	}
	for _, tt := range tests {
		var got []highlight
		params := map[string]any{"textDocument": map[string]string{"uri": uri}, "position": tt.pos}
		if err := c.Call(ctx, "textDocument/documentHighlight", params, &got); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: highlights %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
