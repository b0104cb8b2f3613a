package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/lsp/lsptest"
)

// TestHoverAndDefinitionOnTheWire checks what the wire adds to the
// engine's answers (tested in server/testdata/markers): file URIs into
// the mirror, UTF-16 columns on a line with non-ASCII text, Markdown
// hovers with a range, edits seen by the next request, and buffers that
// are not files.
func TestHoverAndDefinitionOnTheWire(t *testing.T) {
	t.Parallel()
	env := start(t, options{settings: fixtureSettings(t)})
	uri := env.OpenFile("train.py")

	t.Run("a definition is a file URI in the mirror", func(t *testing.T) {
		locs := env.Definition(uri, env.At(uri, "nn.Linear(4, 4)", 3))
		if len(locs) != 1 {
			t.Fatalf("got %d locations, want 1: %+v", len(locs), locs)
		}
		path := uriPath(t, locs[0].URI)
		if !strings.HasPrefix(path, env.Sandbox.Cache) || !strings.HasSuffix(path, "/site/torch/nn/modules/linear.py") {
			t.Errorf("definition %s is not linear.py in the mirror under %s", path, env.Sandbox.Cache)
		}
		if got := lineText(t, path, int(locs[0].Range.Start.Line)); !strings.Contains(got, "class Linear") {
			t.Errorf("definition line %q does not hold class Linear", got)
		}
	})

	t.Run("columns are UTF-16 after non-ASCII text", func(t *testing.T) {
		// "Größe ≥ 1 — 𝛼" is 18 UTF-8 bytes before "act", 14 UTF-16 units.
		pos := env.At(uri, "act = F.relu", 8)
		locs := env.Definition(uri, pos)
		if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "/site/torch/nn/functional.py") || locs[0].Range.Start.Line != 10 {
			t.Fatalf("definition of relu after non-ASCII text = %+v", locs)
		}
		h := env.Hover(uri, pos)
		if h == nil || h.Range == nil || h.Range.Start != pos || h.Range.End.Character != pos.Character+uint32(len("relu")) {
			t.Fatalf("hover range after non-ASCII text = %+v, want relu from %+v", h, pos)
		}
	})

	t.Run("hovers are Markdown with the word's range", func(t *testing.T) {
		pos := env.At(uri, "torch.compile(model", 8)
		h := env.Hover(uri, pos)
		if h == nil || h.Contents.Kind != "markdown" || !strings.Contains(h.Contents.Value, "def compile(") {
			t.Fatalf("hover = %+v", h)
		}
		site := filepath.Join(repoRoot(t), "testdata", "site")
		if !strings.Contains(h.Contents.Value, site+"/torch/__init__.py:45") {
			t.Errorf("hover does not name the path on the target:\n%s", h.Contents.Value)
		}
		if h.Range == nil || h.Range.Start.Line != pos.Line || h.Range.End.Character-h.Range.Start.Character != uint32(len("compile")) {
			t.Errorf("hover range = %+v, want the word compile on line %d", h.Range, pos.Line)
		}
	})

	t.Run("edits are seen by the next request", func(t *testing.T) {
		edited := strings.Replace(env.Text(uri), "F.relu(y)", "F.relu(y) + torch.cuda.is_available()", 1)
		env.EditBuffer(uri, edited)
		locs := env.Definition(uri, env.At(uri, "+ torch.cuda.is_available", 13))
		if len(locs) != 1 || !strings.HasSuffix(locs[0].URI, "torch/cuda/__init__.py") {
			t.Fatalf("definition after edit = %+v", locs)
		}
	})

	t.Run("untitled buffers get answers", func(t *testing.T) {
		const u = "untitled:Untitled-1"
		env.OpenBuffer(u, "import torch.nn as nn\nnn.Linear\n")
		h := env.Hover(u, lsptest.Position{Line: 1, Character: 4})
		if h == nil || !strings.Contains(h.Contents.Value, "class Linear") {
			t.Fatalf("hover in untitled buffer = %+v", h)
		}
		locs := env.Definition(u, lsptest.Position{Line: 1, Character: 4})
		if len(locs) != 1 || !strings.HasPrefix(uriPath(t, locs[0].URI), env.Sandbox.Cache) {
			t.Fatalf("definition in untitled buffer = %+v", locs)
		}
	})

	env.Shutdown()
}
