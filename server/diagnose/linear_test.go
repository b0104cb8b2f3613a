package diagnose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

// linearSizes are the two input sizes the linearity tests compare.
var linearSizes = [2]int{150 << 10, 300 << 10}

// checkWork is Check that also reports the steps its analysis took.
func checkWork(buf *pybuf.Buffer, s site) ([]Diagnostic, int) {
	a := analyze(buf, s.cat)
	c := &checker{a: a, t: a.t, cat: s.cat, opts: Options{SiteDir: s.dir}, files: newSiteFiles(s.dir)}
	c.run()
	return c.out, a.work
}

// Checking a buffer costs steps in proportion to its size, for the shapes
// that used to cost its square (a 300 KB file of chained calls took 42 s):
// doubling the input at most doubles the steps, and each node costs a
// bounded number of them. pybuf's own test bounds each name lookup the
// checks ask it for, which count as one step here.
func TestCheckLinearInInputSize(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	for _, shape := range syntaxtest.Shapes {
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			var work [2]int
			for k, size := range linearSizes {
				src := shape.Gen(size)
				buf := pybuf.Parse(src)
				ds, w := checkWork(buf, s)
				work[k] = w
				nodes := buf.Tree().Len()
				if w > 8*nodes+64 {
					t.Errorf("%d bytes: checking took %d steps for %d nodes", len(src), w, nodes)
				}
				// The exported entry points do the same work.
				if got := Check(buf, s.cat, Options{SiteDir: s.dir}); len(got) != len(ds) {
					t.Errorf("%d bytes: Check found %d diagnostics, the counted run %d", len(src), len(got), len(ds))
				}
				t.Logf("%d bytes, %d nodes: %d steps, %d diagnostics", len(src), nodes, w, len(ds))
			}
			if r := float64(work[1]) / float64(max(work[0], 1)); r > 2.2 {
				t.Errorf("steps grew %.2fx for 2x the input (%v)", r, work)
			}
		})
	}
}

// BenchmarkCheckDeepChain checks a file of chained calls and a single
// chained call at two sizes: the time per byte should stay the same.
func BenchmarkCheckDeepChain(b *testing.B) {
	s := fixture(b)
	for _, gen := range []struct {
		name string
		f    func(int) []byte
	}{{"lines", syntaxtest.ChainLines}, {"one", syntaxtest.DeepChain}} {
		for _, size := range linearSizes {
			src := gen.f(size)
			buf := pybuf.Parse(src)
			b.Run(fmt.Sprintf("%s/%dKB", gen.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					Check(buf, s.cat, Options{SiteDir: s.dir})
				}
			})
		}
	}
}

// BenchmarkFlagRefsDeepChain is FlagRefs, what a hover in such a file
// costs, at two sizes.
func BenchmarkFlagRefsDeepChain(b *testing.B) {
	s := fixture(b)
	for _, size := range linearSizes {
		src := syntaxtest.DeepChain(size)
		buf := pybuf.Parse(src)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				FlagRefs(buf, s.cat)
			}
		})
	}
}

// hazardShapes are sources that exercise the field-hazard checks at
// scale: many calls of one compiled name kept, read and looped over, and
// compiled calls nested deep.
var hazardShapes = []syntaxtest.Shape{
	{Name: "kept outputs", Gen: func(size int) []byte {
		var b strings.Builder
		b.WriteString("import threading\nimport torch\nimport torch._dynamo.config as dc\n\ndc.recompile_limit = 4\nf = torch.compile(lambda x: x, mode=\"reduce-overhead\", dynamic=False)\nouts = []\n")
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "y = f(x)\nouts.append(y)\nprint(y)\nfor n in range(%d):\n    outs.append(f(torch.randn(n, 8)))\n    z = f(x[:n])\n    outs.append(z[0])\nthreading.Thread(target=f, args=(y,)).start()\n", 9+i%3)
		}
		return []byte(b.String())
	}},
	{Name: "nested compiled calls", Gen: func(size int) []byte {
		var b strings.Builder
		b.WriteString("import torch\nf = torch.compile(lambda x: x, mode=\"reduce-overhead\")\ny = ")
		n := (size - b.Len()) / 3
		b.WriteString(strings.Repeat("f(", n))
		b.WriteString("x")
		b.WriteString(strings.Repeat(")", n))
		b.WriteString("\nprint(y)\n")
		return []byte(b.String())
	}},
	// TL011 matches each call with the binding it reads: many compiles
	// of one name, each called, and a training function with backwards.
	{Name: "one name compiled again and again", Gen: func(size int) []byte {
		var b strings.Builder
		b.WriteString("import torch\nx = torch.randn(4, device=\"cuda\", requires_grad=True)\n")
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "m = torch.compile(g%d, mode=\"reduce-overhead\")\ny = m(x)\nm(x).sum().backward()\nwith torch.no_grad():\n    z = m(x)\nself.m(y)\nprint(y, z)\n", i)
		}
		return []byte(b.String())
	}},
}

// The field-hazard checks keep checking linear in the input, on a torch
// that has every hazard's shape.
func TestHazardsLinearInInputSize(t *testing.T) {
	t.Parallel()
	s := overlaySite(t, "hazards-ctxvar", fixtureSite, "shipped", "ctxvar")
	for _, shape := range append(append([]syntaxtest.Shape(nil), syntaxtest.Shapes...), hazardShapes...) {
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			var work [2]int
			for k, size := range linearSizes {
				src := shape.Gen(size)
				buf := pybuf.Parse(src)
				ds, w := checkWork(buf, s)
				work[k] = w
				nodes := buf.Tree().Len()
				if w > 8*nodes+64 {
					t.Errorf("%d bytes: checking took %d steps for %d nodes", len(src), w, nodes)
				}
				t.Logf("%d bytes, %d nodes: %d steps, %d diagnostics", len(src), nodes, w, len(ds))
			}
			if r := float64(work[1]) / float64(max(work[0], 1)); r > 2.2 {
				t.Errorf("steps grew %.2fx for 2x the input (%v)", r, work)
			}
		})
	}
}

// multiplyingShapes are buffers of classes, definitions, starts and
// wrappers that name one another, so that following each of them
// multiplies: the analysis once looked, for each, at every other (a
// thousand classes named alike, each its own base, cost their count to
// the fifth power: 35 s for 30 KB), and a wrapper called many times
// inside another called many times made their product of compile sites
// (294 s and 5 GB for 36 KB).
var multiplyingShapes = []syntaxtest.Shape{
	{Name: "classes of one name, each its own base", Gen: repeated("", "class A(A):\n    pass\n", "class A(threading.Thread):\n    pass\nA().start()\n")},
	{Name: "a circle of base classes", Gen: repeated("", "class C{i}(C{next}):\n    def run(self): f(1)\n", "class C{i}(threading.Thread):\n    pass\nC0().start()\n")},
	{Name: "many Thread subclasses", Gen: repeated("", "class T{i}(threading.Thread):\n    def run(self): f(1)\nT{i}().start()\n", "")},
	{Name: "one name defined and started many times", Gen: repeated("", "def g():\n    f(1)\nthreading.Thread(target=g).start()\n", "")},
	{Name: "one object's methods started many times", Gen: repeated("m = torch.nn.Linear(2, 2)\n", "m.compile(mode=\"reduce-overhead\")\nthreading.Thread(target=m.forward).start()\n", "")},
	{Name: "a wrapper called many times in a wrapper called many times", Gen: func(size int) []byte {
		head := "def w1(m):\n    return torch.compile(m, mode=\"reduce-overhead\")\n"
		n := max(1, size/30)
		return repeated(head+"def w2(m):\n"+strings.Repeat("    g = w1(m)\n", n)+"    return g\n", "h = w2(x)\n", "threading.Thread(target=h).start()\n")(size + 14*n)
	}},
	{Name: "a stack of decorators", Gen: repeated("def w(m):\n    return torch.compile(m, mode=\"reduce-overhead\")\n", "@w\n", "def g(x):\n    return x\nthreading.Thread(target=g).start()\n")},
}

// repeated makes a source of head, then body repeated to the size ({i}
// the repetition's number, {next} the next one's), then tail ({i} the
// last repetition's number), after a compiled f.
func repeated(head, body, tail string) func(int) []byte {
	return func(size int) []byte {
		var b strings.Builder
		b.WriteString("import threading\nimport torch\nf = torch.compile(lambda x: x, mode=\"reduce-overhead\")\n")
		b.WriteString(head)
		last := 0
		for i := 0; b.Len() < size; i++ {
			b.WriteString(strings.NewReplacer("{i}", fmt.Sprint(i), "{next}", fmt.Sprint(i+1)).Replace(body))
			last = i
		}
		b.WriteString(strings.ReplaceAll(tail, "{i}", fmt.Sprint(last+1)))
		return []byte(b.String())
	}
}

// The analysis stays linear in buffers whose names multiply what it
// follows. The sizes are small: before, some of these took seconds at
// 16 KB, growing with the square or the fifth power.
func TestAnalysisLinearWhenNamesMultiply(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	for _, shape := range multiplyingShapes {
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			var work [2]int
			for k, size := range [2]int{4 << 10, 8 << 10} {
				buf := pybuf.Parse(shape.Gen(size))
				ds, w := checkWork(buf, s)
				work[k] = w
				if nodes := buf.Tree().Len(); w > 8*nodes+64 {
					t.Errorf("%d bytes: checking took %d steps for %d nodes", size, w, nodes)
				}
				sites := len(analyze(buf, s.cat).sites)
				if sites > maxSites {
					t.Errorf("%d bytes: %d compile sites, over the bound of %d", size, sites, maxSites)
				}
				t.Logf("%d bytes: %d steps, %d compile sites, %d diagnostics", size, w, sites, len(ds))
			}
			if r := float64(work[1]) / float64(max(work[0], 1)); r > 2.2 {
				t.Errorf("steps grew %.2fx for 2x the input (%v)", r, work)
			}
		})
	}
}
