package lsp_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// BenchmarkHoverRoundTrip measures one hover through the whole wire:
// framing, dispatch, position conversion both ways, over a pipe.
func BenchmarkHoverRoundTrip(b *testing.B) {
	ctx := context.Background()
	c, _ := lsptest.Connect(b, lsptest.Wire{Engine: newTestEngine(), Options: lsp.Options{Logger: zap.NewNop()}}, lsptest.Options{})
	if _, err := c.Handshake(ctx); err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("x = torch.zeros(3)  # Größe 😀\n", 2000)
	c.DidOpen("file:///w/a.py", "python", text)
	b.ReportAllocs()
	for b.Loop() {
		h, err := c.Hover(ctx, "file:///w/a.py", 1000, 6)
		if err != nil || h == nil {
			b.Fatal(h, err)
		}
	}
	b.StopTimer()
}

// BenchmarkDidChange measures one keystroke's incremental change on a
// 2000-line document.
func BenchmarkDidChange(b *testing.B) {
	ctx := context.Background()
	c, _ := lsptest.Connect(b, lsptest.Wire{Engine: newTestEngine(), Options: lsp.Options{Logger: zap.NewNop()}}, lsptest.Options{})
	if _, err := c.Handshake(ctx); err != nil {
		b.Fatal(err)
	}
	c.DidOpen("file:///w/a.py", "python", strings.Repeat("x = torch.zeros(3)  # Größe 😀\n", 2000))
	r := &lsptest.Range{Start: lsptest.Position{Line: 1000, Character: 1}, End: lsptest.Position{Line: 1000, Character: 1}}
	b.ReportAllocs()
	version := int32(1)
	for b.Loop() {
		version++
		if err := c.DidChange("file:///w/a.py", version, lsptest.Change{Range: r, Text: "y"}); err != nil {
			b.Fatal(err)
		}
	}
	// A request after the changes waits for all of them to be applied.
	if _, err := c.Hover(ctx, "file:///w/a.py", 0, 0); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
}
