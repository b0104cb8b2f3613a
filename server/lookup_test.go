package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
	"github.com/torchlsp/torchlsp/server/source"
)

// fixtureEngine starts an engine on the fixture torch through Debian's
// interpreter, as a user's editor would.
func fixtureEngine(t *testing.T) *Engine {
	t.Helper()
	site := fixtureSite(t)
	root := t.TempDir()
	eng := New(Options{Dirs: config.Dirs{Config: filepath.Join(root, "c"), Cache: filepath.Join(root, "k"), State: filepath.Join(root, "s")}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, _ := json.Marshal(map[string]any{"defaultTarget": "fx", "targets": map[string]any{
		"fx": map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}},
	}})
	if err := eng.Initialize(context.Background(), InitializeParams{InitializationOptions: settings}); err != nil {
		t.Fatal(err)
	}
	return eng
}

// posOf returns the position of the n-th (0-based) occurrence of needle in
// text, moved off bytes into it.
func posOf(t *testing.T, text, needle string, n, off int) Position {
	t.Helper()
	at := -1
	for i, from := 0, 0; i <= n; i++ {
		j := strings.Index(text[from:], needle)
		if j < 0 {
			t.Fatalf("occurrence %d of %q not found", n, needle)
		}
		at, from = from+j, from+j+1
	}
	at += off
	line := strings.Count(text[:at], "\n")
	return Position{Line: line, Column: at - (strings.LastIndexByte(text[:at], '\n') + 1)}
}

// A cached lookup serves every place that names the same object, each with
// its own range, and says what the first lookup said.
func TestLookupCacheKeepsRangesPerReference(t *testing.T) {
	eng := fixtureEngine(t)
	text := "import torch\nfrom torch import nn\n\na = nn.Linear(4, 4)\nb = torch.nn.Linear(2, 2)\nc = nn.Linear\n"
	uri := "file:///work/cache_test.py"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	doc := eng.DidOpen(ctx, uri, "", 1, text)
	waitMirror(ctx, t, eng, "torch") // the cache checked below is the mirror's

	var first string
	for i, p := range []Position{posOf(t, text, "Linear", 0, 1), posOf(t, text, "Linear", 1, 1), posOf(t, text, "Linear", 2, 3)} {
		h, err := eng.Hover(ctx, doc, p)
		if err != nil || h == nil {
			t.Fatalf("hover %d at %v: %v, %v", i, p, h, err)
		}
		if !strings.Contains(h.Markdown, "class Linear") {
			t.Errorf("hover %d: %q lacks the class", i, h.Markdown)
		}
		if i == 0 {
			first = h.Markdown
		} else if h.Markdown != first {
			t.Errorf("hover %d differs from the first:\n%s\n---\n%s", i, h.Markdown, first)
		}
		if h.Range == nil || h.Range.Start.Line != p.Line {
			t.Errorf("hover %d range = %+v, want one on line %d", i, h.Range, p.Line)
		}
		locs, err := eng.Definition(ctx, doc, p)
		if err != nil || len(locs) != 1 || !strings.HasSuffix(locs[0].Path, "torch/nn/modules/linear.py") {
			t.Errorf("definition %d = %+v, %v", i, locs, err)
		}
	}
	s, err := eng.session("")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		t.Fatal(err)
	}
	if !ps.Cached("torch.nn.Linear") {
		t.Error("torch.nn.Linear was not cached")
	}
}

// The flag references of a document are computed once per text: after an
// edit the hover follows the flag to its new place.
func TestFlagRefsFollowEdits(t *testing.T) {
	eng := fixtureEngine(t)
	uri := "file:///work/flags_test.py"
	before := "import torch._inductor.config as ic\nic.triton.cudagraph_trees = False\n"
	after := "import torch._inductor.config as ic\n\n\nx = 1\nic.triton.cudagraph_trees = False\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	doc := eng.DidOpen(ctx, uri, "", 1, before)
	isFlag := func(text string, p Position) bool {
		h, err := eng.Hover(ctx, doc, p)
		if err != nil {
			t.Fatalf("hover at %v: %v", p, err)
		}
		return h != nil && strings.Contains(h.Markdown, "config flag")
	}
	old := posOf(t, before, "cudagraph_trees", 0, 2)
	if !isFlag(before, old) {
		t.Fatal("no flag hover before the edit")
	}
	doc, err := eng.DidChange(ctx, uri, 2, []source.Change{{Text: after}})
	if err != nil {
		t.Fatal(err)
	}
	if isFlag(after, old) {
		t.Errorf("line %d still hovers as the flag after the edit moved it", old.Line)
	}
	if !isFlag(after, posOf(t, after, "cudagraph_trees", 0, 2)) {
		t.Error("no flag hover at the flag's new place")
	}
}
