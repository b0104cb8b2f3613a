package lsp_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// xrefText puts two surrogate pairs (4 UTF-16 units, 8 bytes) before the
// names: positions on the wire and byte columns differ by 4 there.
const xrefText = "x = \"😀😀\"; get_obj = 1\nrun = 2\n"

// TestXrefPositions: the symbol and call hierarchy requests convert every
// position between UTF-16 and bytes, both ways (an item the editor sends
// back included), and the server advertises them.
func TestXrefPositions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	eng := newTestEngine()
	c, _ := start(t, eng, lsp.Options{Version: "test"}, lsptest.Options{})
	var init struct {
		Capabilities struct {
			DocumentSymbolProvider  bool `json:"documentSymbolProvider"`
			WorkspaceSymbolProvider bool `json:"workspaceSymbolProvider"`
			CallHierarchyProvider   bool `json:"callHierarchyProvider"`
		} `json:"capabilities"`
	}
	if err := c.Call(ctx, "initialize", c.InitializeParams(), &init); err != nil {
		t.Fatal(err)
	}
	if caps := init.Capabilities; !caps.DocumentSymbolProvider || !caps.WorkspaceSymbolProvider || !caps.CallHierarchyProvider {
		t.Errorf("capabilities = %+v", caps)
	}
	if err := c.Initialized(); err != nil {
		t.Fatal(err)
	}
	uri := "file:///work/x.py"
	if err := c.DidOpen(uri, "python", xrefText); err != nil {
		t.Fatal(err)
	}
	// get_obj starts at byte 16, UTF-16 unit 12.
	wantSel := lsptest.Range{Start: lsptest.Position{Line: 0, Character: 12}, End: lsptest.Position{Line: 0, Character: 19}}

	var syms []struct {
		Name      string           `json:"name"`
		Kind      int              `json:"kind"`
		Location  lsptest.Location `json:"location"`
		Container string           `json:"containerName"`
	}
	if err := c.Call(ctx, "workspace/symbol", map[string]any{"query": "get_obj"}, &syms); err != nil {
		t.Fatal(err)
	}
	if len(syms) != 1 || syms[0].Location.Range != wantSel || syms[0].Location.URI != uri || syms[0].Kind != 12 || syms[0].Container != "m" {
		t.Errorf("workspace/symbol = %+v, want get_obj, a function of m, at %+v", syms, wantSel)
	}

	var outline []struct {
		Name           string        `json:"name"`
		Range          lsptest.Range `json:"range"`
		SelectionRange lsptest.Range `json:"selectionRange"`
	}
	if err := c.Call(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": map[string]string{"uri": uri}}, &outline); err != nil {
		t.Fatal(err)
	}
	if len(outline) != 2 || outline[0].Range.End.Character != 23 || outline[1].Name != "run" {
		t.Errorf("documentSymbol = %+v, want two lines, the first ending at unit 23", outline)
	}

	var items []map[string]any
	at := map[string]any{"textDocument": map[string]string{"uri": uri}, "position": lsptest.Position{Line: 0, Character: 14}}
	if err := c.Call(ctx, "textDocument/prepareCallHierarchy", at, &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0]["name"] != "get_obj" {
		t.Fatalf("prepareCallHierarchy = %+v, want get_obj", items)
	}
	for _, method := range []string{"callHierarchy/incomingCalls", "callHierarchy/outgoingCalls"} {
		var calls []struct {
			From       *struct{ SelectionRange lsptest.Range } `json:"from"`
			To         *struct{ SelectionRange lsptest.Range } `json:"to"`
			FromRanges []lsptest.Range                         `json:"fromRanges"`
		}
		if err := c.Call(ctx, method, map[string]any{"item": items[0]}, &calls); err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || len(calls[0].FromRanges) != 1 || calls[0].FromRanges[0] != wantSel {
			t.Errorf("%s = %+v, want the item back at %+v", method, calls, wantSel)
			continue
		}
		other := calls[0].From
		if other == nil {
			other = calls[0].To
		}
		if other == nil || other.SelectionRange != wantSel {
			t.Errorf("%s: item %+v, want its name at %+v", method, other, wantSel)
		}
	}
}

// TestForgedCallItems: an item the editor sends back names its file by
// URI, and the server reads that file to convert positions. An item that
// names a named pipe or a device is refused with an error; it neither
// blocks the server (a pipe held every later request, shutdown too) nor
// reads without end (/dev/zero ended the process out of memory).
func TestForgedCallItems(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	fifo := filepath.Join(t.TempDir(), "calls.py")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := start(t, newTestEngine(), lsp.Options{Version: "test"}, lsptest.Options{})
	if err := c.Call(ctx, "initialize", c.InitializeParams(), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Initialized(); err != nil {
		t.Fatal(err)
	}
	r := lsptest.Range{End: lsptest.Position{Character: 1}}
	for _, uri := range []string{"file://" + fifo, "file:///dev/zero"} {
		for _, method := range []string{"callHierarchy/incomingCalls", "callHierarchy/outgoingCalls"} {
			item := map[string]any{"name": "f", "kind": 12, "uri": uri, "range": r, "selectionRange": r}
			// Waited for without cancelling: a cancel could not reach a
			// server whose reader is blocked.
			p, err := c.Start(method, map[string]any{"item": item})
			if err != nil {
				t.Fatal(err)
			}
			callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			reply, err := p.Wait(callCtx)
			cancel()
			if err != nil {
				// Let the blocked reader go, so the server can stop.
				if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatalf("%s of an item in %s: no reply within 10s: the server blocked (%v)", method, uri, err)
			}
			if reply.Error == nil {
				t.Errorf("%s of an item in %s = %s, want an error", method, uri, reply.Result)
			} else {
				t.Logf("%s of an item in %s: %v", method, uri, reply.Error)
			}
		}
	}
	var syms []any
	if err := c.Call(ctx, "workspace/symbol", map[string]any{"query": "x"}, &syms); err != nil {
		t.Fatalf("workspace/symbol after the forged items: %v", err)
	}
}
