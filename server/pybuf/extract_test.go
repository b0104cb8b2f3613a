package pybuf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestImports(t *testing.T) {
	src := `import os, torch.nn as nn
import torch._inductor.config
from torch.nn import functional as F, Linear
from . import models
from ..util import helper as h
from torch import *
try:
    from torch._inductor import config as inductor_config
except ImportError:
    import fallback as inductor_config

class Net:
    import numpy as np
    def forward(self):
        global G
        import torch.distributed as dist
        import torch.fx as G
`
	type imp struct {
		Name, Qualname, Module string
		Relative, Alternative  bool
		Scope                  ScopeKind
		ScopeName              string
		Line                   int
	}
	want := []imp{
		{"os", "os", "os", false, false, ScopeModule, "", 0},
		{"nn", "torch.nn", "torch.nn", false, false, ScopeModule, "", 0},
		{"torch", "torch", "torch._inductor.config", false, false, ScopeModule, "", 1},
		{"F", "torch.nn.functional", "torch.nn", false, false, ScopeModule, "", 2},
		{"Linear", "torch.nn.Linear", "torch.nn", false, false, ScopeModule, "", 2},
		{"models", "", ".", true, false, ScopeModule, "", 3},
		{"h", "", "..util", true, false, ScopeModule, "", 4},
		{"*", "torch", "torch", false, false, ScopeModule, "", 5},
		{"inductor_config", "torch._inductor.config", "torch._inductor", false, false, ScopeModule, "", 7},
		{"inductor_config", "fallback", "fallback", false, true, ScopeModule, "", 9},
		{"np", "numpy", "numpy", false, false, ScopeClass, "Net", 12},
		{"dist", "torch.distributed", "torch.distributed", false, false, ScopeFunction, "forward", 15},
		{"G", "torch.fx", "torch.fx", false, false, ScopeModule, "", 16},
	}
	var got []imp
	for _, i := range Parse([]byte(src)).Imports() {
		got = append(got, imp{i.Name, i.Qualname, i.Module, i.Relative, i.Alternative, i.Scope.Kind, i.Scope.Name, i.NameSpan.Start.Line})
		if i.Stmt.Start.Line > i.NameSpan.Start.Line || i.Stmt.End.Line < i.NameSpan.End.Line {
			t.Errorf("%s: statement %v does not hold name %v", i.Name, i.Stmt, i.NameSpan)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Imports():\n got  %+v\n want %+v", got, want)
	}
	var imported []string
	for _, i := range Parse([]byte(src)).Imports() {
		imported = append(imported, i.Imported)
	}
	if got := strings.Join(imported, ","); got != ",,,functional,Linear,models,helper,,config,,,," {
		t.Errorf("imported names %q", got)
	}
	b := Parse([]byte(src))
	if got := b.Imports()[1].NameSpan; got != (Span{Start: Pos{Line: 0, Col: 23}, End: Pos{Line: 0, Col: 25}}) {
		t.Errorf("span of nn = %v, want 0:23-0:25", got)
	}
}

func TestCalls(t *testing.T) {
	src := `import torch
from torch import compile as tc
from torch._inductor import config as ic

@torch.compile(mode="max-autotune-no-cudagraphs")
def step(x):
    return x

f = torch.compile(model, mode="reduce-overhead",
                  options={"triton.cudagraphs": False, 'epilogue_fusion': True, 3: 4, "n": {"a": 1}},
                  fullgraph=True, dynamic=None, backend=torch._inductor.compile_fx)
g = tc(model, **kw)
h = compile(model)  # the builtin: not torch.compile

def other(torch):
    return torch.compile(model)  # a parameter

with ic.patch("triton.cudagraph_trees", False):
    pass
with torch._inductor.config.patch({"triton.cudagraphs": True}):
    pass
torch._inductor.config.patch(triton__cudagraphs=False)
`
	b := Parse([]byte(src))
	calls := b.Calls("torch.compile")
	if len(calls) != 3 {
		t.Fatalf("Calls(torch.compile) = %d calls, want 3: %+v", len(calls), calls)
	}
	dec := calls[0]
	if dec.Span.Start.Line != 4 || len(dec.Keywords) != 1 || dec.Keywords[0].Name != "mode" ||
		dec.Keywords[0].Value.Str != "max-autotune-no-cudagraphs" || dec.Keywords[0].Value.Kind != ValueString {
		t.Errorf("decorator call = %+v", dec)
	}
	c := calls[1]
	if c.Span.Start != (Pos{Line: 8, Col: 4}) || c.Span.End.Line != 10 || c.CalleeSpan != (Span{Start: Pos{Line: 8, Col: 4}, End: Pos{Line: 8, Col: 17}}) {
		t.Errorf("call spans = %v %v", c.Span, c.CalleeSpan)
	}
	if len(c.Args) != 1 || c.Args[0].Text != "model" || c.Args[0].Kind != ValueName || c.Args[0].Qualname != "" {
		t.Errorf("Args = %+v", c.Args)
	}
	kw := map[string]Keyword{}
	for _, k := range c.Keywords {
		kw[k.Name] = k
	}
	if k := kw["mode"]; k.Value.Str != "reduce-overhead" || k.NameSpan != (Span{Start: Pos{Line: 8, Col: 25}, End: Pos{Line: 8, Col: 29}}) ||
		k.Value.Span != (Span{Start: Pos{Line: 8, Col: 30}, End: Pos{Line: 8, Col: 47}}) {
		t.Errorf("mode = %+v", k)
	}
	opts := kw["options"].Value
	if opts.Kind != ValueDict || len(opts.Entries) != 3 {
		t.Fatalf("options = %+v", opts)
	}
	e0, e1, e2 := opts.Entries[0], opts.Entries[1], opts.Entries[2]
	if e0.Key != "triton.cudagraphs" || e0.KeySpan != (Span{Start: Pos{Line: 9, Col: 27}, End: Pos{Line: 9, Col: 46}}) || e0.Value.Kind != ValueConstant || e0.Value.Text != "False" {
		t.Errorf("entry 0 = %+v", e0)
	}
	if e1.Key != "epilogue_fusion" || e1.Value.Text != "True" {
		t.Errorf("entry 1 = %+v", e1)
	}
	if e2.Key != "n" || e2.Value.Kind != ValueDict || len(e2.Value.Entries) != 1 || e2.Value.Entries[0].Key != "a" {
		t.Errorf("entry 2 = %+v", e2)
	}
	if k := kw["fullgraph"]; k.Value.Kind != ValueConstant || k.Value.Text != "True" {
		t.Errorf("fullgraph = %+v", k)
	}
	if k := kw["backend"]; k.Value.Kind != ValueName || k.Value.Qualname != "torch._inductor.compile_fx" {
		t.Errorf("backend = %+v", k)
	}
	if g := calls[2]; g.Span.Start.Line != 11 || len(g.Args) != 1 || len(g.Keywords) != 0 {
		t.Errorf("aliased call = %+v", g)
	}

	patches := b.Calls("torch._inductor.config.patch")
	if len(patches) != 3 {
		t.Fatalf("Calls(patch) = %d, want 3: %+v", len(patches), patches)
	}
	if a := patches[0].Args; len(a) != 2 || a[0].Str != "triton.cudagraph_trees" || a[1].Text != "False" {
		t.Errorf("patch 0 args = %+v", a)
	}
	if a := patches[1].Args; len(a) != 1 || a[0].Kind != ValueDict || a[0].Entries[0].Key != "triton.cudagraphs" {
		t.Errorf("patch 1 args = %+v", a)
	}
	if k := patches[2].Keywords; len(k) != 1 || k[0].Name != "triton__cudagraphs" {
		t.Errorf("patch 2 keywords = %+v", k)
	}
	if got := b.Calls("torch.nothing"); len(got) != 0 {
		t.Errorf("Calls(torch.nothing) = %+v", got)
	}
}

func TestStringAt(t *testing.T) {
	cases := []struct {
		name, src, want string
		ok              bool
	}{
		{"option key", `torch.compile(m, options={"triton.cuda^graphs": False})`, "triton.cudagraphs", true},
		{"on opening quote", `config.patch(^"triton.cudagraphs", False)`, "triton.cudagraphs", true},
		{"single quotes", `x = 'a^b'`, "ab", true},
		{"escapes", `x = "a\tb\x41\u00e9\n^"`, "a\tbAé\n", true},
		{"unknown escape kept", `x = "a\d^"`, `a\d`, true},
		{"raw", `x = r"a\t^"`, `a\t`, true},
		{"bytes", `x = b"\xff^"`, "\xff", true},
		{"triple", "x = \"\"\"line1\nli^ne2\"\"\"", "line1\nline2", true},
		{"f-string text", `x = f"a{b}^c"`, "a{b}c", true},
		{"f-string inner string", `x = f"a{d['k^ey']}c"`, "key", true},
		{"concatenated piece", `x = "ab" "c^d"`, "cd", true},
		{"outside", `x =^ "ab"`, "", false},
		{"after closing quote", `x = "ab"^`, "", false},
		{"comment", `# "a^b"`, "", false},
		{"unterminated", "import torch\ny = torch.compile(model, mode=\"max-auto^", "max-auto", true},
		{"unterminated middle", "config.patch(\"triton.cu^dag\nx = 1", "triton.cudag", true},
		{"non-ASCII", `s = "日本^語"`, "日本語", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, pos := cursor(t, tc.src)
			v, span, ok := Parse(src).StringAt(pos)
			if ok != tc.ok || v != tc.want {
				t.Fatalf("StringAt(%v) = %q, %v, want %q, %v", pos, v, ok, tc.want, tc.ok)
			}
			if ok && (span.Start.Line > pos.Line || span.Start.Line == pos.Line && span.Start.Col > pos.Col) {
				t.Errorf("span %v starts after the cursor %v", span, pos)
			}
		})
	}
}

func TestRefs(t *testing.T) {
	src := `import torch
from torch._inductor import config as ic
torch._inductor.config.triton.cudagraph_trees = False
ic.triton.cudagraphs = True
x = my.own
`
	var got []string
	for _, r := range Parse([]byte(src)).Refs() {
		if r.Write {
			got = append(got, r.Qualname)
		}
	}
	want := []string{"torch._inductor.config.triton.cudagraph_trees", "torch._inductor.config.triton.cudagraphs"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
	all := Parse([]byte(src)).Refs()
	for _, r := range all {
		if strings.HasPrefix(r.Qualname, "my") {
			t.Errorf("user name resolved: %+v", r)
		}
	}
	if len(all) < 10 {
		t.Errorf("Refs() = %d refs, want at least 10", len(all))
	}
}

func TestPositions(t *testing.T) {
	b := Parse([]byte("ab\r\ncd\n\nxyz"))
	cases := []struct {
		pos Pos
		off int
		ok  bool
	}{
		{Pos{Line: 0, Col: 0}, 0, true},
		{Pos{Line: 0, Col: 2}, 2, true},
		{Pos{Line: 0, Col: 3}, 0, false}, // the \r is not part of the line
		{Pos{Line: 1, Col: 1}, 5, true},
		{Pos{Line: 2, Col: 0}, 7, true},
		{Pos{Line: 2, Col: 1}, 0, false},
		{Pos{Line: 3, Col: 3}, 11, true},
		{Pos{Line: 4, Col: 0}, 0, false},
		{Pos{Line: -1, Col: 0}, 0, false},
		{Pos{Line: 0, Col: -1}, 0, false},
	}
	for _, tc := range cases {
		off, ok := b.lines.Offset(b.src, tc.pos)
		if ok != tc.ok || ok && off != tc.off {
			t.Errorf("offset(%v) = %d, %v, want %d, %v", tc.pos, off, ok, tc.off, tc.ok)
		}
		if ok && b.lines.Pos(off) != tc.pos {
			t.Errorf("pos(%d) = %v, want %v", off, b.lines.Pos(off), tc.pos)
		}
	}
	if _, ok := b.RefAt(Pos{Line: 9, Col: 0}); ok {
		t.Error("RefAt past the end answered")
	}
}

func TestHasErrors(t *testing.T) {
	if Parse([]byte("import torch\nx = torch.nn.Linear(3, 4)\n")).HasErrors() {
		t.Error("clean source reported errors")
	}
	if !Parse([]byte("import torch\nx = torch.nn.\n")).HasErrors() {
		t.Error("broken source reported no errors")
	}
}

func TestEmptyAndGarbage(t *testing.T) {
	for _, src := range []string{"", "\n", "\x00\xff\xfe", "((((((", "def", "import", "from . import", "x = \"\"\"",
		// Pathological shapes that once made answering quadratic.
		"import torch\n" + strings.Repeat("x = torch.nn\nx.Linear\n", 2000),
		strings.Repeat("a.", 5000) + "b",
		strings.Repeat("a = b\nb = a\n", 2000),
		strings.Repeat("try:\n import a as x\nexcept E:\n x = 1\n", 500) + "x.y",
	} {
		b := Parse([]byte(src))
		for line := 0; line < 2; line++ {
			for col := 0; col < 8; col++ {
				b.RefAt(Pos{Line: line, Col: col})
				b.StringAt(Pos{Line: line, Col: col})
			}
		}
		b.Refs()
		b.Imports()
		b.Calls("torch.compile")
	}
}

// giveUpCtx is a context that reports cancellation from its n-th Err call
// on: it cancels a parse mid-way without depending on timing.
type giveUpCtx struct {
	context.Context
	calls, n int
}

func (c *giveUpCtx) Done() <-chan struct{} { return make(chan struct{}) }

func (c *giveUpCtx) Err() error {
	c.calls++
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

func TestParseContext(t *testing.T) {
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	src := readTrain(t)
	big := bytes.Repeat(src, 20)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b, err := p.ParseContext(ctx, src); b != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v, %v", b, err)
	}
	gc := &giveUpCtx{Context: context.Background(), n: 3}
	if b, err := p.ParseContext(gc, big); b != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled mid-parse: %v, %v", b, err)
	}
	if gc.calls < 3 {
		t.Fatalf("the parse never checked its context (%d calls)", gc.calls)
	}
	// The parser is still good for the next version.
	b, err := p.ParseContext(&giveUpCtx{Context: context.Background(), n: 1 << 30}, src)
	if err != nil {
		t.Fatal(err)
	}
	if b.HasErrors() || len(b.Calls("torch.compile")) != 3 {
		t.Errorf("parse after a cancelled one went wrong: errors %v", b.HasErrors())
	}
}

// TestConcurrentReaders shares one Buffer between goroutines, as the
// server does between requests; run with -race.
func TestConcurrentReaders(t *testing.T) {
	b := Parse(readTrain(t))
	want, ok := b.RefAt(Pos{Line: 36, Col: 40})
	if !ok || want.Qualname != "torch._inductor.config.triton.cudagraph_trees" {
		t.Fatalf("RefAt = %+v, %v", want, ok)
	}
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 50 {
				if got, _ := b.RefAt(Pos{Line: 36, Col: 40}); got != want {
					err = fmt.Errorf("RefAt = %+v, want %+v", got, want)
				}
				if n := len(b.Calls("torch.compile")); n != 3 {
					err = fmt.Errorf("Calls = %d, want 3", n)
				}
				b.StringAt(Pos{Line: 275, Col: 40})
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestScopesOncePerVersion: a buffer's name table is built once, from the
// buffer's own tree (one parse per version serves both).
func TestScopesOncePerVersion(t *testing.T) {
	t.Parallel()
	b := Parse([]byte("import torch\n\ndef f(x):\n    return torch.relu(x)\n"))
	tab := b.Scopes()
	if tab != b.Scopes() || tab.Tree() != b.Tree() {
		t.Fatal("the table is not the buffer's, built once")
	}
	if occ, ok := tab.OccurrenceAt(strings.Index(string(b.src), "relu")); !ok || tab.Tree().Text(occ.Node) != "relu" {
		t.Fatalf("no occurrence of relu: %+v", occ)
	}
}
