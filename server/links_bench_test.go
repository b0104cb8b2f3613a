package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/source"
)

// benchLog is n lines of real output of torch 1.13 (the captures, over and
// over), as a long training log with tracebacks looks.
func benchLog(b *testing.B, n int) string {
	b.Helper()
	files, err := filepath.Glob(filepath.Join("traceback", "testdata", "torch113", "*.txt"))
	if err != nil || len(files) == 0 {
		b.Fatalf("captures: %v", err)
	}
	var all []string
	for _, f := range files {
		all = append(all, strings.Split(strings.TrimRight(capture(b, "torch113/"+filepath.Base(f)), "\n"), "\n")...)
	}
	lines := make([]string, 0, n)
	for len(lines) < n {
		lines = append(lines, all[:min(len(all), n-len(lines))]...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// settle waits for the work a fresh mirror starts in the background (the
// index build, the op table), so that it does not share the CPU with what
// is measured.
func settle(b *testing.B, eng *Engine) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := eng.session("")
	if err != nil {
		b.Fatal(err)
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ps.OpTable(ctx); err != nil {
		b.Fatal(err)
	}
	for st := ps.Index().Stats(); st.Parsed < st.Files; st = ps.Index().Stats() {
		if ctx.Err() != nil {
			b.Fatalf("the index never finished: %+v", st)
		}
		time.Sleep(50 * time.Millisecond) // setup only: the index has no event to wait on
	}
}

// BenchmarkDocumentLinks is textDocument/documentLink's engine side on
// 10,000 lines of real tracebacks, mapped onto Debian's torch 1.13 mirror
// and the workspace: the parse, the version statements, every path's
// mapping (each distinct path proven inside the mirror once).
func BenchmarkDocumentLinks(b *testing.B) {
	eng, ws := traceEngine(b, nil, nil)
	text := benchLog(b, 10000)
	ctx := context.Background()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(ws, "train.log")), "", 1, text)
	links, err := eng.DocumentLinks(ctx, doc) // the mirror is ready from here on
	if err != nil || len(links) == 0 {
		b.Fatalf("%d links, %v", len(links), err)
	}
	b.ReportMetric(float64(len(links)), "links")
	settle(b, eng)
	b.ResetTimer()
	for b.Loop() {
		if _, err := eng.DocumentLinks(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDocumentLinks100MB is the same request on a 100 MB log: the
// links of its first and last 2 MB.
func BenchmarkDocumentLinks100MB(b *testing.B) {
	eng, ws := traceEngine(b, nil, nil)
	text := benchLog(b, 10000)
	text = strings.Repeat(text, (100<<20)/len(text)+1)
	ctx := context.Background()
	doc := eng.DidOpen(ctx, source.FileURI(filepath.Join(ws, "train.log")), "", 1, text)
	links, err := eng.DocumentLinks(ctx, doc)
	if err != nil || len(links) == 0 {
		b.Fatalf("%d links, %v", len(links), err)
	}
	b.ReportMetric(float64(len(links)), "links")
	settle(b, eng)
	b.ResetTimer()
	for b.Loop() {
		if _, err := eng.DocumentLinks(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
}
