package pybuf

import (
	"fmt"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

// linearSizes are the two input sizes the linearity tests compare.
var linearSizes = [2]int{150 << 10, 300 << 10}

// maxRefAtSteps bounds one RefAt on any identifier, whatever the buffer's
// size: a binary search, a chain walk of at most maxChain links, a scope
// walk, and where the text did not parse the fallback's read of at most
// maxFallbackLine bytes of the line.
const maxRefAtSteps = maxFallbackLine + 120

// The analysis of a buffer and RefAt on every identifier cost steps in
// proportion to the buffer's size, for the shapes that used to cost its
// square: doubling the input at most doubles the steps, plus the binary
// searches' log factor.
func TestLinearInInputSize(t *testing.T) {
	t.Parallel()
	for _, shape := range syntaxtest.Shapes {
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			var analysis, queries [2]int
			for k, size := range linearSizes {
				src := shape.Gen(size)
				b := Parse(src)
				analysis[k] = b.work
				if b.work > 8*len(b.nodes)+64 {
					t.Errorf("%d bytes: analysis took %d steps for %d nodes", len(src), b.work, len(b.nodes))
				}
				worst := 0
				for _, id := range b.idents {
					var m meter
					b.refAt(b.tree.StartPos(id.node), &m)
					queries[k] += m.steps
					worst = max(worst, m.steps)
				}
				if worst > maxRefAtSteps {
					t.Errorf("%d bytes: a RefAt took %d steps, more than %d", len(src), worst, maxRefAtSteps)
				}
				t.Logf("%d bytes, %d nodes, %d identifiers: analysis %d steps, RefAt on each identifier %d steps (worst %d)",
					len(src), len(b.nodes), len(b.idents), b.work, queries[k], worst)
			}
			if r := ratio(analysis); r > 2.2 {
				t.Errorf("analysis steps grew %.2fx for 2x the input (%v)", r, analysis)
			}
			if r := ratio(queries); r > 2.5 {
				t.Errorf("RefAt steps grew %.2fx for 2x the input (%v)", r, queries)
			}
		})
	}
}

func ratio(w [2]int) float64 { return float64(w[1]) / float64(max(w[0], 1)) }

// BenchmarkParseDeepChain analyses a single chained call at two sizes: the
// time per byte should stay the same.
func BenchmarkParseDeepChain(b *testing.B) {
	for _, size := range linearSizes {
		src := syntaxtest.DeepChain(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			p, err := NewParser()
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				p.Parse(src)
			}
		})
	}
}

// BenchmarkRefAtDeepChain asks for every identifier of a single chained
// call at two sizes: the time per identifier should stay the same.
func BenchmarkRefAtDeepChain(b *testing.B) {
	for _, size := range linearSizes {
		buf := Parse(syntaxtest.DeepChain(size))
		var positions []Pos
		for _, id := range buf.idents {
			positions = append(positions, buf.tree.StartPos(id.node))
		}
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf.RefAt(positions[i%len(positions)])
				i++
			}
		})
	}
}

// scopeAt's search agrees with a scan of every scope, the way it was
// answered before the scopes were indexed.
func TestScopeAtMatchesScan(t *testing.T) {
	t.Parallel()
	srcs := [][]byte{
		readTrain(t),
		[]byte("lambda: 1\nclass C(base=lambda: x):\n    def f(self, d=lambda: [y for y in z]):\n        return {k: v for k, v in w}\nx = (lambda a: (lambda b: a + b))\n"),
		syntaxtest.NestedCalls(4 << 10),
	}
	for _, src := range srcs {
		b := Parse(src)
		for off := 0; off <= len(src); off++ {
			want := int32(0)
			for i := 1; i < len(b.scopes); i++ {
				sc := &b.scopes[i]
				if sc.Start <= off && off <= sc.End && sc.Start >= b.scopes[want].Start {
					want = int32(i)
				}
			}
			if got := b.scopeAt(off, nil); got != want {
				t.Fatalf("scopeAt(%d) = %d (%v), the scan says %d (%v)", off, got, b.scopes[got].Kind, want, b.scopes[want].Kind)
			}
		}
	}
}
