package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/server/pyscope"
)

// Definition inside a large mirrored file, end to end in the engine: the
// package is mirrored and indexed (its index built and cached), the file
// is opened from the mirror as an editor opens it after a jump. "first"
// is what a user waits for after opening the file: the document's parse,
// its name table and one definition; "warm" is one more definition on the
// same version. The names asked are 16 spread over the file (reads,
// attributes, keywords), the same every run.
//
// compile_fx.py of torch 2.11 with TORCHLSP_TORCH211_SITE set; otherwise
// Debian torch 1.13's torch/nn/functional.py (5,186 lines).

type mirrorBench struct {
	eng       *Engine
	path      string // the file in the mirror
	text      string
	positions []Position
}

func newMirrorBench(b *testing.B) *mirrorBench {
	b.Helper()
	target, rel := map[string]any(nil), ""
	if site := os.Getenv("TORCHLSP_TORCH211_SITE"); site != "" {
		if _, err := os.Stat(benchPython); err != nil {
			b.Skipf("%s is missing", benchPython)
		}
		target, rel = map[string]any{"python": benchPython, "env": map[string]string{"PYTHONPATH": site}}, "torch/_inductor/compile_fx.py"
	} else {
		target, rel = debianTarget(b), "torch/nn/functional.py"
	}
	be := newBenchEngine(b, target)
	ctx := context.Background()
	s, err := be.eng.session("")
	if err != nil {
		b.Fatal(err)
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		b.Fatal(err)
	}
	// The flag catalog and the op table scan the mirror in the
	// background: let them finish before anything is timed.
	if _, _, err := s.Catalog(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := ps.OpTable(ctx); err != nil {
		b.Fatal(err)
	}
	mb := &mirrorBench{eng: be.eng, path: filepath.Join(ps.Mirror().SiteDir, filepath.FromSlash(rel))}
	data, err := os.ReadFile(mb.path)
	if err != nil {
		b.Fatal(err)
	}
	mb.text = string(data)
	// 16 names spread over the file, of the roles a reader asks about.
	doc := be.eng.DidOpen(ctx, "file://"+mb.path, "", 1, mb.text)
	tab := doc.Buffer().Scopes()
	var cands []pyscope.Occurrence
	for _, occ := range tab.Occurrences() {
		switch occ.Role {
		case pyscope.RoleRead, pyscope.RoleAttribute, pyscope.RoleKeyword:
			cands = append(cands, occ)
		}
	}
	for i := range 16 {
		occ := cands[i*len(cands)/16]
		p := tab.Tree().StartPos(occ.Node)
		mb.positions = append(mb.positions, Position{Line: p.Line, Column: p.Col})
	}
	answered := 0
	for _, p := range mb.positions {
		locs, err := be.eng.Definition(ctx, doc, p)
		if err != nil {
			b.Fatal(err)
		}
		answered += len(locs)
	}
	if answered < 8 {
		b.Fatalf("only %d of 16 names answered", answered)
	}
	be.eng.DidClose(ctx, "file://"+mb.path)
	return mb
}

func BenchmarkDefinitionInMirrorFile(b *testing.B) {
	mb := newMirrorBench(b)
	ctx := context.Background()
	uri := "file://" + mb.path
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p := mb.positions[i%len(mb.positions)]
			i++
			doc := mb.eng.DidOpen(ctx, uri, "", int32(i), mb.text)
			if _, err := mb.eng.Definition(ctx, doc, p); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			mb.eng.DidClose(ctx, uri)
			b.StartTimer()
		}
	})
	b.Run("warm", func(b *testing.B) {
		doc := mb.eng.DidOpen(ctx, uri, "", 1, mb.text)
		defer mb.eng.DidClose(ctx, uri)
		for _, p := range mb.positions {
			if _, err := mb.eng.Definition(ctx, doc, p); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range mb.positions {
				if _, err := mb.eng.Definition(ctx, doc, p); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mb.positions))/1e3, "µs/definition")
	})
}
