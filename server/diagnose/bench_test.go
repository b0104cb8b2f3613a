package diagnose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// benchSource builds a 300-line training script with config writes,
// compiles, patches, env reads and thread pools spread through it.
func benchSource() []byte {
	var b strings.Builder
	b.WriteString(`import os
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
import torch._inductor.config as inductor_config
from torch._inductor import config

inductor_config.triton.cudagraph_trees = True
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")

`)
	for i := 0; b.Len() == 0 || strings.Count(b.String(), "\n") < 290; i++ {
		fmt.Fprintf(&b, `
@torch.compile(mode="reduce-overhead")
def step%[1]d(x):
    y = x * %[1]d
    return torch.relu(y) + config.max_autotune


def work%[1]d(batch):
    with config.patch({"triton.cudagraphs": False}):
        return step%[1]d(batch)


pool%[1]d = ThreadPoolExecutor(2)
future%[1]d = pool%[1]d.submit(work%[1]d, %[1]d)
flag%[1]d = os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE")
`, i)
	}
	for strings.Count(b.String(), "\n") < 300 {
		b.WriteString("print(inductor_config.debug)\n")
	}
	return []byte(b.String())
}

func BenchmarkCheck(b *testing.B) {
	s := fixture(b)
	src := benchSource()
	if n := strings.Count(string(src), "\n"); n != 300 {
		b.Fatalf("source has %d lines, want 300", n)
	}
	buf := pybuf.Parse(src)
	if len(Check(buf, s.cat, Options{SiteDir: s.dir})) == 0 {
		b.Fatal("the benchmark source produced no diagnostics")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Check(buf, s.cat, Options{SiteDir: s.dir})
	}
}

func BenchmarkFlagRefs(b *testing.B) {
	s := fixture(b)
	src := benchSource()
	buf := pybuf.Parse(src)
	b.ReportAllocs()
	for b.Loop() {
		FlagRefs(buf, s.cat)
	}
}

// BenchmarkParseTree is the tree-sitter parse and flatten alone, which
// the buffer's analysis pays once and Check no longer repeats.
func BenchmarkParseTree(b *testing.B) {
	src := benchSource()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := syntax.Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

// manyUnknownFlags is a buffer of n writes of flags the catalog lacks:
// distinct misspellings when distinct, else one misspelling repeated (a
// generated or pasted file that yields a finding on every line).
func manyUnknownFlags(n int, distinct bool) []byte {
	var b strings.Builder
	b.WriteString("import torch._inductor.config as config\n")
	for i := range n {
		if distinct {
			fmt.Fprintf(&b, "config.triton.cudagraph_treez_%d = True\n", i)
		} else {
			b.WriteString("config.triton.cudagraph_treez = True\n")
		}
	}
	return []byte(b.String())
}

// BenchmarkCheckUnknownFlags is Check on 10,000 lines that are each an
// unknown flag (TL004 with its "did you mean" hint), distinct or repeated.
func BenchmarkCheckUnknownFlags(b *testing.B) {
	s := fixture(b)
	for _, distinct := range []bool{false, true} {
		name := "repeated"
		if distinct {
			name = "distinct"
		}
		b.Run(name, func(b *testing.B) {
			buf := pybuf.Parse(manyUnknownFlags(10_000, distinct))
			if n := len(Check(buf, s.cat, Options{SiteDir: s.dir})); n < 10_000 {
				b.Fatalf("%d diagnostics, want one a line", n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Check(buf, s.cat, Options{SiteDir: s.dir})
			}
		})
	}
}
