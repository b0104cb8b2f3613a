package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/config"
)

// The engine benchmarks run hover and definition end to end, as the LSP
// adapter calls them, on a real local target: Debian's interpreter with
// either the fixture torch (PYTHONPATH=testdata/site) or Debian's torch
// 1.13. They measure the warm path: the package is mirrored and indexed,
// the document parsed, every query answered once before timing starts.

const benchPython = "/usr/bin/python3"

// benchScript is the training script lspbench drives the servers with.
const benchScript = "../cmd/lspbench/testdata/workspace/train.py"

// benchQueries are (marker, word) pairs located in benchScript, the same
// places cmd/lspbench hovers.
var benchQueries = [][2]string{
	{"self.up = nn.Linear(", "Linear"},
	{"F.relu(", "relu"},
	{"torch.optim.AdamW(", "AdamW"},
	{"loader = DataLoader(", "DataLoader"},
	{"class SyntheticSequences(Dataset)", "Dataset"},
	{"x + checkpoint(", "checkpoint"},
	{"torch.compile(model", "compile"},
	{"return compile_fx(", "compile_fx"},
	{"F.cross_entropy(", "cross_entropy"},
	{"self.norm1 = nn.LayerNorm(", "LayerNorm"},
	{"class FeedForward(nn.Module)", "Module"},
	{"scheduler = CosineAnnealingLR(", "CosineAnnealingLR"},
	{"torch.nn.utils.clip_grad_norm_(", "clip_grad_norm_"},
	{"torch.manual_seed(0)", "manual_seed"},
	{"torch.no_grad()", "no_grad"},
	{"torch.autocast(", "autocast"},
}

type benchEngine struct {
	eng       *Engine
	uri       string
	doc       *Snapshot
	positions []Position
}

// newBenchEngine starts an engine on target settings, opens the script
// and answers every query once (mirroring and indexing happen here).
func newBenchEngine(b *testing.B, target map[string]any) *benchEngine {
	b.Helper()
	if _, err := os.Stat(benchPython); err != nil {
		b.Skipf("%s is missing", benchPython)
	}
	script, err := os.ReadFile(benchScript)
	if err != nil {
		b.Skip(err)
	}
	root := b.TempDir()
	dirs := config.Dirs{Config: filepath.Join(root, "config"), Cache: filepath.Join(root, "cache"), State: filepath.Join(root, "state")}
	eng := New(Options{Dirs: dirs})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Shutdown(ctx)
	})
	settings, err := json.Marshal(map[string]any{"defaultTarget": "bench", "targets": map[string]any{"bench": target}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Initialize(ctx, InitializeParams{InitializationOptions: settings}); err != nil {
		b.Fatal(err)
	}
	eng.Initialized(ctx)
	be := &benchEngine{eng: eng, uri: "file://" + filepath.Join(root, "train.py")}
	be.doc = eng.DidOpen(ctx, be.uri, "", 1, string(script))
	text := string(script)
	for _, q := range benchQueries {
		at := strings.Index(text, q[0])
		if at < 0 {
			b.Fatalf("marker %q not in %s", q[0], benchScript)
		}
		off := at + strings.Index(q[0], q[1]) + 1
		line := strings.Count(text[:off], "\n")
		col := off - (strings.LastIndexByte(text[:off], '\n') + 1)
		be.positions = append(be.positions, Position{Line: line, Column: col})
	}
	// Let background indexing finish, so that it does not run beside the
	// timed loop.
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
	answered := 0
	for _, p := range be.positions {
		h, err := eng.Hover(ctx, be.doc, p)
		if err != nil {
			b.Fatalf("hover at %v: %v", p, err)
		}
		if h != nil {
			answered++
		}
		if _, err := eng.Definition(ctx, be.doc, p); err != nil {
			b.Fatalf("definition at %v: %v", p, err)
		}
	}
	if answered == 0 {
		b.Fatal("no hover answered")
	}
	return be
}

func fixtureTarget(b *testing.B) map[string]any {
	site, err := filepath.Abs("../testdata/site")
	if err != nil {
		b.Fatal(err)
	}
	return map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}}
}

func debianTarget(b *testing.B) map[string]any {
	if _, err := os.Stat("/usr/lib/python3/dist-packages/torch/__init__.py"); err != nil {
		b.Skip("Debian's python3-torch is not installed")
	}
	return map[string]any{"python": benchPython}
}

func (be *benchEngine) hoverLoop(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range be.positions {
			if _, err := be.eng.Hover(ctx, be.doc, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(be.positions))/1e3, "µs/hover")
}

func (be *benchEngine) definitionLoop(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range be.positions {
			if _, err := be.eng.Definition(ctx, be.doc, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(be.positions))/1e3, "µs/definition")
}

// One op is a hover (or definition) of each of the 16 queries.
func BenchmarkHoverFixture(b *testing.B) { newBenchEngine(b, fixtureTarget(b)).hoverLoop(b) }
func BenchmarkDefinitionFixture(b *testing.B) {
	newBenchEngine(b, fixtureTarget(b)).definitionLoop(b)
}
func BenchmarkHoverDebianTorch(b *testing.B) { newBenchEngine(b, debianTarget(b)).hoverLoop(b) }
func BenchmarkDefinitionDebianTorch(b *testing.B) {
	newBenchEngine(b, debianTarget(b)).definitionLoop(b)
}

// benchWarmRestart measures what a restarted server does before its first
// answer: a new engine on the cache directories a previous one filled
// (mirror, index cache, gate catalog) opens the document and answers a
// definition of nn.Linear. Engine start and shutdown are outside the timer.
func benchWarmRestart(b *testing.B, target map[string]any) {
	first := newBenchEngine(b, target)
	dirs := first.eng.opts.Dirs
	script, err := os.ReadFile(benchScript)
	if err != nil {
		b.Fatal(err)
	}
	settings, err := json.Marshal(map[string]any{"defaultTarget": "bench", "targets": map[string]any{"bench": target}})
	if err != nil {
		b.Fatal(err)
	}
	p := first.positions[0] // nn.Linear
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		eng := New(Options{Dirs: dirs})
		b.StartTimer()
		if err := eng.Initialize(ctx, InitializeParams{InitializationOptions: settings}); err != nil {
			b.Fatal(err)
		}
		eng.Initialized(ctx)
		doc := eng.DidOpen(ctx, first.uri, "", 1, string(script))
		locs, err := eng.Definition(ctx, doc, p)
		if err != nil || len(locs) != 1 {
			b.Fatalf("first definition after restart: %v, %v", locs, err)
		}
		b.StopTimer()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = eng.Shutdown(sctx)
		cancel()
		b.StartTimer()
	}
}

func BenchmarkWarmRestartFixture(b *testing.B)     { benchWarmRestart(b, fixtureTarget(b)) }
func BenchmarkWarmRestartDebianTorch(b *testing.B) { benchWarmRestart(b, debianTarget(b)) }
