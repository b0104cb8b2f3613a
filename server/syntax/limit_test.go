package syntax

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

func newTestParser(t testing.TB) *Parser {
	t.Helper()
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Texts on which tree-sitter takes quadratic time stop at CPULimit: they
// need ten times their limit or more (2.3 s for the line continuations,
// 2.2 s for the ellipses, on the development machine).
func TestQuadraticTextsGiveUp(t *testing.T) {
	t.Parallel()
	p := newTestParser(t)
	for _, tc := range []struct {
		shape string
		size  int
	}{
		{"line continuations", 32 << 10},
		{"ellipses", 48 << 10},
	} {
		src := quadratic(t, tc.shape)(tc.size)
		tree := p.Parse(src)
		if !tree.GaveUp() || !tree.HasError() || tree.Len() != 0 {
			t.Errorf("%s, %d bytes: gave up %v, has error %v, %d nodes; want an empty tree that gave up at %v",
				tc.shape, len(src), tree.GaveUp(), tree.HasError(), tree.Len(), CPULimit(len(src)))
		}
	}
	// The parser is whole again.
	if tree := p.Parse([]byte("import torch\n")); tree.Len() != 4 || tree.HasError() || tree.GaveUp() {
		t.Errorf("after giving up: %d nodes, error %v, gave up %v", tree.Len(), tree.HasError(), tree.GaveUp())
	}
}

func quadratic(t testing.TB, name string) func(int) []byte {
	for _, s := range syntaxtest.Quadratic {
		if s.Name == name {
			return s.Gen
		}
	}
	t.Fatalf("no quadratic shape %q", name)
	return nil
}

// Every way of parsing stops at the limit, and the parser parses whole
// texts after it did.
func TestCPULimitStopsEveryParse(t *testing.T) {
	t.Parallel()
	p := newTestParser(t)
	src := []byte(strings.Repeat("x = torch.nn.functional.relu(y, inplace=True)\n", 2000))
	want := p.Parse(src).Len()
	p.cpuLimit = func(int) time.Duration { return 0 }
	check := func(how string, tree *Tree) {
		t.Helper()
		if !tree.GaveUp() || !tree.HasError() || tree.Len() != 0 {
			t.Errorf("%s with no CPU time: gave up %v, has error %v, %d nodes", how, tree.GaveUp(), tree.HasError(), tree.Len())
		}
	}
	check("Parse", p.Parse(src))
	tree, err := p.ParseContext(t.Context(), src)
	if err != nil {
		t.Fatalf("ParseContext over the limit: %v, want the empty tree and no error", err)
	}
	check("ParseContext", tree)
	check("ParseRanges", p.ParseRanges(src, []Range{NewLines(src).Range(0, len(src))}))
	p.Visit(src, func(tree *Tree) { check("Visit", tree) })

	p.cpuLimit = nil
	for range 2 {
		if tree := p.Parse(src); tree.Len() != want || tree.HasError() || tree.GaveUp() {
			t.Fatalf("after giving up: %d nodes (want %d), error %v, gave up %v", tree.Len(), want, tree.HasError(), tree.GaveUp())
		}
	}
}

// A parse cancelled while tree-sitter balances its finished tree (its last
// progress callbacks) leaves a parser that parses: tree-sitter 0.25's
// ts_parser_reset forgot the tree but not that it was being balanced, and
// the next parse aborted the process.
func TestStoppedWhileBalancing(t *testing.T) {
	t.Parallel()
	p := newTestParser(t)
	src := []byte(strings.Repeat("x = torch.nn.functional.relu(y, inplace=True)\n", 5000))
	count := &giveUp{Context: context.Background(), n: math.MaxInt}
	p.parse(count, src, nil)
	last := count.calls - 1 // the final call is parse's own check, after tree-sitter returned
	if _, stopped, err := p.parse(&giveUp{Context: context.Background(), n: last}, src, nil); !stopped || err == nil {
		t.Fatalf("cancelled at the last progress callback: stopped %v, err %v", stopped, err)
	}
	if tree := p.Parse([]byte("import torch\n")); tree.Len() != 4 || tree.HasError() {
		t.Errorf("after a cancel while balancing: %d nodes, error %v", tree.Len(), tree.HasError())
	}
}

// BenchmarkParseQuadratic parses the texts on which tree-sitter is
// quadratic at two sizes: the CPU time per parse (cpu-ms/op) stays under
// CPULimit (limit-ms), so it grows with the size, not its square.
func BenchmarkParseQuadratic(b *testing.B) {
	for _, shape := range syntaxtest.Quadratic {
		for _, size := range []int{16 << 10, 64 << 10} {
			src := shape.Gen(size)
			b.Run(fmt.Sprintf("%s/%dKB", strings.ReplaceAll(shape.Name, " ", "_"), size>>10), func(b *testing.B) {
				p := newTestParser(b)
				b.SetBytes(int64(len(src)))
				start := syntaxtest.CPUTime()
				for b.Loop() {
					p.Parse(src)
				}
				b.ReportMetric(float64((syntaxtest.CPUTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(CPULimit(len(src)).Microseconds())/1000, "limit-ms")
			})
		}
	}
}
