package pybuf

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
	"github.com/torchlsp/torchlsp/server/syntax"
	"github.com/torchlsp/torchlsp/server/syntax/syntaxtest"
)

func readTrain(t testing.TB) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/train.py")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// maxFuzzSource is the largest text FuzzRefAt analyses. A parse of n
// bytes may take syntax.CPULimit(n) (0.38 s at 64 KiB) when tree-sitter's
// error recovery is quadratic on it: larger inputs would pass the CPU time
// fuzzdeadline gives an input on that bound alone.
const maxFuzzSource = 64 << 10

// FuzzRefAt checks that no text, however broken, makes the analysis
// panic or hand back spans outside the text. Its seed corpus holds the
// texts on which tree-sitter is quadratic (testdata/fuzz/FuzzRefAt).
func FuzzRefAt(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	train := readTrain(f)
	for _, n := range []int{0, 1, 100, 517, 1000, 2222, 4000, 6001, 8000, len(train) - 1} {
		n = min(n, len(train))
		f.Add(train[:n], 0, 0)
		f.Add(train[:n], bytes.Count(train[:n], []byte{'\n'}), 4)
	}
	for _, tc := range refCases {
		src, pos := cursor(f, tc.src)
		f.Add(src, pos.Line, pos.Col)
	}
	f.Add([]byte("\x00\xff\xfe\xfd"), 0, 1)
	f.Add([]byte("x = \"\"\"\n\ttorch.\r\n"), 1, 7)
	f.Add([]byte("from ...... import (a as"), 0, 22)
	f.Add([]byte("lambda torch=lambda: torch.: 0"), 0, 27)
	f.Add([]byte(strings.Repeat("(", 500)+"torch."), 0, 506)
	p, err := NewParser()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, src []byte, line, col int) {
		deadline.Start(t, src, line, col)
		if len(src) > maxFuzzSource {
			t.Skipf("%d bytes, over %d", len(src), maxFuzzSource)
		}
		analyse(t, p, src, Pos{Line: line, Col: col})
	})
}

// analyse is one input of FuzzRefAt: the analysis of src, and the
// questions a buffer is asked, at pos and at every position of the first
// lines. It fails t on a span outside the text or an answer with no name.
func analyse(t testing.TB, p *Parser, src []byte, pos Pos) {
	b := p.Parse(src)
	check := func(s Span) {
		for _, q := range []Pos{s.Start, s.End} {
			if _, ok := b.lines.Offset(b.src, q); !ok && q != b.lines.Pos(len(src)) {
				t.Fatalf("span %v outside the text", s)
			}
		}
	}
	if r, ok := b.RefAt(pos); ok {
		check(r.Span)
		if r.Qualname == "" {
			t.Fatalf("answer without a name: %+v", r)
		}
	}
	if _, s, ok := b.StringAt(pos); ok {
		check(s)
	}
	for l := 0; l < 3; l++ {
		for c := 0; c < 40; c++ {
			b.RefAt(Pos{Line: l, Col: c})
			b.StringAt(Pos{Line: l, Col: c})
		}
	}
	for _, r := range b.Refs() {
		check(r.Span)
	}
	for _, c := range b.Calls("torch.compile") {
		check(c.Span)
	}
	b.Imports()
}

func TestTrainScript(t *testing.T) {
	src := readTrain(t)
	b := Parse(src)
	if b.HasErrors() {
		t.Fatal("train.py did not parse cleanly")
	}
	lines := strings.Split(string(src), "\n")
	// find returns the position of the n-th (0-based) occurrence of word
	// on the first line holding context.
	find := func(context, word string, n int) Pos {
		for i, l := range lines {
			if strings.Contains(l, context) {
				col := 0
				for ; n >= 0; n-- {
					j := strings.Index(l[col:], word)
					if j < 0 {
						t.Fatalf("%q not on line %q", word, l)
					}
					col += j + 1
				}
				return Pos{Line: i, Col: col - 1}
			}
		}
		t.Fatalf("no line holds %q", context)
		return Pos{}
	}
	cases := []struct {
		context, word string
		n             int
		want          string
	}{
		{"torch._inductor.config.triton.cudagraph_trees = False", "cudagraph_trees", 0, "torch._inductor.config.triton.cudagraph_trees"},
		{"inductor_config.triton.unique_kernel_names", "unique_kernel_names", 0, "torch._inductor.config.triton.unique_kernel_names"},
		{"dcfg.suppress_errors", "suppress_errors", 0, "torch._dynamo.config.suppress_errors"},
		{"class CausalSelfAttention(nn.Module)", "Module", 0, "torch.nn.Module"},
		{"y = F.scaled_dot_product_attention(", "scaled_dot_product_attention", 0, "torch.nn.functional.scaled_dot_product_attention"},
		{"self.c_attn = nn.Linear", "Linear", 0, "torch.nn.Linear"},
		{"compiled = DDP(compiled", "DDP", 0, "torch.nn.parallel.DistributedDataParallel"},
		{"sched = LambdaLR(", "LambdaLR", 0, "torch.optim.lr_scheduler.LambdaLR"},
		{"@torch.compile(mode=\"max-autotune-no-cudagraphs\")", "compile", 0, "torch.compile"},
		{"scaler = torch.cuda.amp.GradScaler", "GradScaler", 0, "torch.cuda.amp.GradScaler"},
		{"with torch._inductor.config.patch(", "patch", 0, "torch._inductor.config.patch"},
		{"rank = dist.get_rank()", "get_rank", 0, "torch.distributed.get_rank"},
		{"tokens = torch.tensor(load_corpus()", "load_corpus", 0, ""},
		{"utils.report()", "report", 0, ""},
		{"self.wte.weight = self.lm_head.weight", "weight", 0, ""},
	}
	for _, tc := range cases {
		pos := find(tc.context, tc.word, tc.n)
		r, ok := b.RefAt(pos)
		if got := r.Qualname; ok != (tc.want != "") || got != tc.want {
			t.Errorf("%s at %v: got %q, %v; want %q", tc.word, pos, got, ok, tc.want)
		}
	}
	calls := b.Calls("torch.compile")
	if len(calls) != 3 {
		t.Fatalf("Calls(torch.compile) = %d, want 3", len(calls))
	}
	opts := calls[2].Keywords[0].Value
	if len(opts.Entries) != 2 || opts.Entries[0].Key != "triton.cudagraphs" || opts.Entries[0].Value.Text != "False" {
		t.Errorf("serve_threads options = %+v", opts)
	}
}

func BenchmarkParse(b *testing.B) {
	src := readTrain(b)
	p, err := NewParser()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		p.Parse(src)
	}
}

// BenchmarkRefAt asks for the name at every identifier of the script, in
// turn, as hover requests would.
func BenchmarkRefAt(b *testing.B) {
	src := readTrain(b)
	buf := Parse(src)
	var positions []Pos
	for _, id := range buf.idents {
		positions = append(positions, buf.lines.Pos(int(buf.nodes[id.node].Start)+1))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf.RefAt(positions[i%len(positions)])
		i++
	}
}

// BenchmarkRefAtBroken asks at positions that need the line fallback.
func BenchmarkRefAtBroken(b *testing.B) {
	src := append(readTrain(b), []byte("\nx = torch.nn.functional.\n")...)
	buf := Parse(src)
	pos := buf.lines.Pos(len(src) - 1)
	if _, ok := buf.RefAt(pos); !ok {
		b.Fatal("no answer at the trailing dot")
	}
	b.ReportAllocs()
	for b.Loop() {
		buf.RefAt(pos)
	}
}

func BenchmarkCalls(b *testing.B) {
	buf := Parse(readTrain(b))
	b.ReportAllocs()
	for b.Loop() {
		buf.Calls("torch.compile")
	}
}

// BenchmarkAnalyseQuadratic runs an input of FuzzRefAt on each text on
// which tree-sitter is quadratic, at two sizes up to maxFuzzSource: the
// parse stops at syntax.CPULimit, so an input's CPU time (cpu-ms/op) stays
// near its limit (limit-ms) and grows with the size, not its square.
func BenchmarkAnalyseQuadratic(b *testing.B) {
	p, err := NewParser()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for _, shape := range syntaxtest.Quadratic {
		for _, size := range []int{maxFuzzSource / 4, maxFuzzSource} {
			src := shape.Gen(size)
			b.Run(fmt.Sprintf("%s/%dKB", strings.ReplaceAll(shape.Name, " ", "_"), size>>10), func(b *testing.B) {
				start := syntaxtest.CPUTime()
				for b.Loop() {
					analyse(b, p, src, Pos{Line: 0, Col: 100})
				}
				b.ReportMetric(float64((syntaxtest.CPUTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(syntax.CPULimit(len(src)).Microseconds())/1000, "limit-ms")
			})
		}
	}
}
