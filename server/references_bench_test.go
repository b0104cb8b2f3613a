package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// References, callers and workspace symbols reach the workspace's files
// that no editor has open. The workspace is generated: 1,000 modules (20
// packages of 50, about 3.6 KB each, 3.6 MB in all) of classes and
// functions over torch, ten of which call torch's get_obj. The question
// is asked from the mirrored cudagraph_trees.py, as after a jump into
// torch (the fixture torch of testdata/site, whose own files name get_obj
// twice, so the time is the workspace's). "cold" is the first question of
// a server started on a mirror and index already made: every file is
// walked and read once, the ten that name get_obj are parsed and searched;
// "warm" asks again (the walk, a stat per file, the ten parsed tables
// kept; "references-everywhere" asks for F.relu, which every module
// calls, so every file is parsed, and more than the kept tables hold; held-B is what the first question left held). Symbols: a query
// for one class of the 1,000 modules (the two files that hold the word
// are parsed when cold), and one that every module's functions match
// (every file parsed when cold).

const (
	benchWsPackages = 20
	benchWsModules  = 50 // per package
	benchWsUsesEach = 100
)

// genWorkspace writes the generated workspace under dir.
func genWorkspace(b *testing.B, dir string) {
	b.Helper()
	for p := range benchWsPackages {
		pkg := filepath.Join(dir, fmt.Sprintf("pkg%02d", p))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		for m := range benchWsModules {
			i := p*benchWsModules + m
			if err := os.WriteFile(filepath.Join(pkg, fmt.Sprintf("mod%02d.py", m)), []byte(benchModule(i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchModule is the text of generated module i.
func benchModule(i int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "\"\"\"Module %d of a generated training project.\"\"\"\nimport os\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n", i)
	uses := i%benchWsUsesEach == 0
	if uses {
		s.WriteString("from torch._inductor.cudagraph_trees import get_obj\n")
	}
	if i > 0 {
		fmt.Fprintf(&s, "from pkg%02d.mod%02d import Block%d\n", (i-1)/benchWsModules, (i-1)%benchWsModules, i-1)
	}
	fmt.Fprintf(&s, "\nSCALE_%d = %d\n\n\nclass Block%d(nn.Module):\n", i, i, i)
	s.WriteString("    def __init__(self, dim: int) -> None:\n        super().__init__()\n        self.proj = nn.Linear(dim, dim)\n        self.norm = nn.LayerNorm(dim)\n\n")
	s.WriteString("    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        y = self.proj(x)\n        return F.relu(self.norm(y)) + x\n")
	for f := range 10 {
		fmt.Fprintf(&s, "\n\ndef step_%d_%d(model, batch, lr=1e-3):\n", i, f)
		s.WriteString("    \"\"\"One step of training over a batch.\"\"\"\n    out = model(batch[\"input\"])\n    loss = F.mse_loss(out, batch[\"target\"])\n")
		s.WriteString("    loss.backward()\n    with torch.no_grad():\n        for p in model.parameters():\n            p -= lr * p.grad\n    return loss.item()\n")
	}
	if uses {
		fmt.Fprintf(&s, "\n\ndef lookup_%d(local):\n    return get_obj(local, \"tree_manager_containers\")\n", i)
	}
	return s.String()
}

// wsBench is an engine on the fixture torch, the generated workspace
// its folder, with the mirrored cudagraph_trees.py and functional.py
// open.
type wsBench struct {
	eng          *Engine
	trees, fn    *Snapshot
	getObj, relu Position
}

func newWsBench(b *testing.B, dirs config.Dirs, ws string) *wsBench {
	b.Helper()
	eng := New(Options{Dirs: dirs})
	settings, err := json.Marshal(map[string]any{"defaultTarget": "bench", "targets": map[string]any{"bench": fixtureTarget(b)}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{WorkspaceFolders: []string{ws}, InitializationOptions: settings}); err != nil {
		b.Fatal(err)
	}
	s, err := eng.session("")
	if err != nil {
		b.Fatal(err)
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		b.Fatal(err)
	}
	if err := ps.Index().Build(ctx); err != nil {
		b.Fatal(err)
	}
	open := func(rel, def string) (*Snapshot, Position) {
		path := filepath.Join(ps.Mirror().SiteDir, filepath.FromSlash(rel))
		text, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		before, _, ok := strings.Cut(string(text), "def "+def+"(")
		if !ok {
			b.Fatalf("no %s in %s", def, path)
		}
		return eng.DidOpen(ctx, "file://"+path, "", 1, string(text)), Position{Line: strings.Count(before, "\n"), Column: len("def ")}
	}
	wb := &wsBench{eng: eng}
	wb.trees, wb.getObj = open("torch/_inductor/cudagraph_trees.py", "get_obj")
	wb.fn, wb.relu = open("torch/nn/functional.py", "relu")
	return wb
}

func (wb *wsBench) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = wb.eng.Shutdown(ctx)
}

// references asks once and checks the workspace's share of the answer.
func (wb *wsBench) references(b *testing.B, ws string) {
	wb.referencesOf(b, ws, wb.trees, wb.getObj, 2*benchWsPackages*benchWsModules/benchWsUsesEach)
}

// referencesEverywhere asks for the references of F.relu, which every
// module calls: every file is parsed and searched when cold.
func (wb *wsBench) referencesEverywhere(b *testing.B, ws string) {
	wb.referencesOf(b, ws, wb.fn, wb.relu, benchWsPackages*benchWsModules)
}

func (wb *wsBench) referencesOf(b *testing.B, ws string, doc *Snapshot, pos Position, want int) {
	locs, err := wb.eng.References(context.Background(), doc, pos, true)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, l := range locs {
		if strings.HasPrefix(l.Path, ws+string(filepath.Separator)) {
			n++
		}
	}
	if n != want {
		b.Fatalf("%d references in the workspace, want %d", n, want)
	}
}

// symbols asks for one class of the workspace: two files hold the word.
func (wb *wsBench) symbols(b *testing.B, ws string) {
	syms, err := wb.eng.WorkspaceSymbols(context.Background(), "Block517")
	if err != nil {
		b.Fatal(err)
	}
	if len(syms) == 0 || syms[0].Name != "Block517" || !strings.HasPrefix(syms[0].Location.Path, ws) {
		b.Fatalf("symbols of Block517: %+v", syms)
	}
}

// symbolsEverywhere asks for a name every module defines: every file is
// parsed when cold.
func (wb *wsBench) symbolsEverywhere(b *testing.B, ws string) {
	syms, err := wb.eng.WorkspaceSymbols(context.Background(), "step_9")
	if err != nil {
		b.Fatal(err)
	}
	if len(syms) != MaxWorkspaceSymbols || !strings.HasPrefix(syms[0].Location.Path, ws) {
		b.Fatalf("symbols of step_9: %d, first %+v", len(syms), syms[0])
	}
}

func BenchmarkWorkspaceReferences(b *testing.B) {
	root := b.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	ws := filepath.Join(root, "work")
	genWorkspace(b, ws)
	newWsBench(b, dirs, ws).close() // the mirror and its index, made once
	cold := func(b *testing.B, ask func(*wsBench, *testing.B, string)) {
		b.ReportAllocs()
		b.StopTimer()
		for range b.N {
			wb := newWsBench(b, dirs, ws)
			b.StartTimer()
			ask(wb, b, ws)
			b.StopTimer()
			wb.close()
		}
	}
	warm := func(b *testing.B, ask func(*wsBench, *testing.B, string)) {
		wb := newWsBench(b, dirs, ws)
		defer wb.close()
		// What the first question leaves held (the memo of every file's
		// words or outline, the tables kept), measured after a collection.
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ask(wb, b, ws)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportAllocs()
		for b.Loop() {
			ask(wb, b, ws)
		}
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "held-B")
	}
	b.Run("references/cold", func(b *testing.B) { cold(b, (*wsBench).references) })
	b.Run("references/warm", func(b *testing.B) { warm(b, (*wsBench).references) })
	b.Run("references-everywhere/cold", func(b *testing.B) { cold(b, (*wsBench).referencesEverywhere) })
	b.Run("references-everywhere/warm", func(b *testing.B) { warm(b, (*wsBench).referencesEverywhere) })
	b.Run("symbols/cold", func(b *testing.B) { cold(b, (*wsBench).symbols) })
	b.Run("symbols/warm", func(b *testing.B) { warm(b, (*wsBench).symbols) })
	b.Run("symbols-everywhere/cold", func(b *testing.B) { cold(b, (*wsBench).symbolsEverywhere) })
	b.Run("symbols-everywhere/warm", func(b *testing.B) { warm(b, (*wsBench).symbolsEverywhere) })
}
