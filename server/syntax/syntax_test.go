package syntax

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

func TestAllocatorIsLibc(t *testing.T) {
	if !allocatorIsLibc() {
		t.Fatal("tree-sitter does not allocate with libc's malloc: something reset the allocator after this package's init")
	}
	// Parsing through go-tree-sitter's own API must not change it either.
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(sitter.NewLanguage(python.Language())); err != nil {
		t.Fatal(err)
	}
	p.Parse([]byte("x = 1\n"), nil).Close()
	if !allocatorIsLibc() {
		t.Fatal("go-tree-sitter changed the allocator")
	}
}

// Parses on many threads at once share glibc's bounded arenas rather than
// each thread making its own, which would keep its own free memory.
func TestParsesShareBoundedArenas(t *testing.T) {
	if os.Getenv("MALLOC_ARENA_MAX") != "" {
		t.Skip("MALLOC_ARENA_MAX is set: the environment rules")
	}
	if mallocArenas() < 0 {
		t.Skip("this libc does not tell its arenas")
	}
	src := []byte(strings.Repeat("def f(x):\n    return [g(y) for y in x if y]\n", 2000))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			// A thread of its own for each parse: the case glibc would
			// give an arena each.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p, err := NewParser()
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			<-start
			for range 4 {
				if tr := p.Parse(src); tr.Len() == 0 {
					t.Error("no nodes")
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if n := mallocArenas(); n > syntaxArenaMax {
		t.Errorf("%d malloc arenas after 16 threads parsed at once; want at most %d", n, syntaxArenaMax)
	}
}

// The generated tables name exactly the grammar's named kinds and fields.
func TestKindsMatchGrammar(t *testing.T) {
	t.Parallel()
	lang := sitter.NewLanguage(python.Language())
	grammar := map[string]bool{}
	for i := uint32(0); i < lang.NodeKindCount(); i++ {
		if id := uint16(i); lang.NodeKindIsNamed(id) && lang.NodeKindIsVisible(id) {
			grammar[lang.NodeKindForId(id)] = true
		}
	}
	ours := map[string]bool{}
	for k := KindIdentifier; k < kindCount; k++ {
		ours[k.String()] = true
		if !grammar[k.String()] {
			t.Errorf("kind %q is not in the grammar: run go generate ./server/syntax", k)
		}
	}
	for name := range grammar {
		if !ours[name] {
			t.Errorf("grammar kind %q has no Kind: run go generate ./server/syntax", name)
		}
	}
	if got, want := int(fieldCount)-1, int(lang.FieldCount()); got != want {
		t.Errorf("%d fields, grammar has %d: run go generate ./server/syntax", got, want)
	}
	for i := uint32(1); i <= lang.FieldCount(); i++ {
		name := lang.FieldNameForId(uint16(i))
		if f := Field(python3.fields[i]); f.String() != name {
			t.Errorf("field %d: table says %q, grammar %q", i, f, name)
		}
	}
	for i, k := range python3.kinds {
		id := uint16(i)
		if lang.NodeKindIsNamed(id) && lang.NodeKindIsVisible(id) && Kind(k).String() != lang.NodeKindForId(id) {
			t.Errorf("symbol %d (%s) maps to %s", i, lang.NodeKindForId(id), Kind(k))
		}
	}
}

// refNode is a named node as go-tree-sitter's own cursor reports it.
type refNode struct {
	kind, field                        string
	start, end                         uint
	startRow, startCol, endRow, endCol uint
	parent                             int
	missing                            bool
}

// reference walks tree-sitter's tree of src through go-tree-sitter, one
// cgo call per step, keeping the named nodes in pre-order.
func reference(t *testing.T, src []byte) []refNode {
	t.Helper()
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(sitter.NewLanguage(python.Language())); err != nil {
		t.Fatal(err)
	}
	tree := p.Parse(src, nil)
	defer tree.Close()
	c := tree.Walk()
	defer c.Close()
	var out []refNode
	var stack []int
	anc := -1
	for {
		n := c.Node()
		cur := -1
		if n.IsNamed() {
			cur = len(out)
			sp, ep := n.StartPosition(), n.EndPosition()
			out = append(out, refNode{
				kind: n.Kind(), field: c.FieldName(), start: n.StartByte(), end: n.EndByte(),
				startRow: sp.Row, startCol: sp.Column, endRow: ep.Row, endCol: ep.Column,
				parent: anc, missing: n.IsMissing(),
			})
		}
		if c.GotoFirstChild() {
			stack = append(stack, anc)
			if cur >= 0 {
				anc = cur
			}
			continue
		}
		for !c.GotoNextSibling() {
			if !c.GotoParent() {
				return out
			}
			anc = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
	}
}

func testSources(t *testing.T) map[string][]byte {
	t.Helper()
	srcs := map[string][]byte{
		"empty":   nil,
		"newline": []byte("\n"),
		"unicode": []byte("s = \"héllo ✓\"  # ü\nπ = 3.14\n"),
		"crlf":    []byte("import torch\r\nx = torch.nn.Linear(\r\n  3, 4)\r\n"),
		"missing": []byte("def f(:\n  return (1,\n"),
		"deep":    []byte("x = a" + strings.Repeat(".b()", 2000) + "\n"),
		"nested":  []byte("x = " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500) + "\n"),
	}
	var files []string
	for _, pattern := range []string{"testdata/*.py", "../pybuf/testdata/*.py", "../../testdata/site/torch/*/*.py", "../../testdata/site/torch/*.py"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if site := os.Getenv("TORCHLSP_TORCH211_SITE"); site != "" {
		for _, rel := range []string{"torch/__init__.py", "torch/_inductor/config.py", "torch/nn/functional.py"} {
			files = append(files, filepath.Join(site, rel))
		}
	}
	if len(files) < 5 {
		t.Fatalf("found only %d test files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[f] = b
	}
	return srcs
}

// The C flatten agrees node for node with a walk through go-tree-sitter.
func TestFlattenMatchesTreeSitter(t *testing.T) {
	t.Parallel()
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for name, src := range testSources(t) {
		tree := p.Parse(src)
		want := reference(t, src)
		if tree.Len() != len(want) {
			t.Errorf("%s: %d nodes, tree-sitter has %d named", name, tree.Len(), len(want))
			continue
		}
		// Children lists, rebuilt from the reference's parents.
		kids := map[int][]int32{}
		for i, w := range want {
			kids[w.parent] = append(kids[w.parent], int32(i))
		}
		for i, w := range want {
			n := int32(i)
			nd := tree.Node(n)
			got := refNode{
				kind: nd.Kind.String(), field: nd.Field.String(), start: uint(nd.Start), end: uint(nd.End),
				startRow: uint(nd.StartRow), startCol: uint(nd.StartCol), endRow: uint(nd.EndRow), endCol: uint(nd.EndCol),
				parent: int(nd.Parent), missing: tree.IsMissing(n),
			}
			if got != w {
				t.Errorf("%s: node %d = %+v, tree-sitter %+v", name, i, got, w)
				break
			}
			if l := tree.ChildList(n); !equal(l, kids[i]) {
				t.Errorf("%s: node %d children %v, tree-sitter %v", name, i, l, kids[i])
				break
			}
			inErr := false
			for a := w.parent; a >= 0; a = want[a].parent {
				inErr = inErr || want[a].kind == "ERROR"
			}
			if tree.InError(n) != inErr {
				t.Errorf("%s: node %d InError = %v", name, i, !inErr)
				break
			}
		}
		if hasErr := strings.Contains(name, "broken") || name == "missing"; hasErr && !tree.HasError() {
			t.Errorf("%s: HasError false", name)
		}
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A parse of some ranges yields only their statements, at their true
// positions.
func TestParseRanges(t *testing.T) {
	t.Parallel()
	src := []byte("import os\nx = 1\ndef f():\n    return os.sep\ny = 2\n")
	lines := NewLines(src)
	second := strings.Index(string(src), "def")
	end := strings.Index(string(src), "y =")
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tree := p.ParseRanges(src, []Range{lines.Range(0, 10), lines.Range(second, end)})
	var kinds []string
	for c := range tree.Children(tree.Root()) {
		kinds = append(kinds, tree.Kind(c).String()+"@"+tree.StartPos(c).String())
	}
	if got, want := strings.Join(kinds, " "), "import_statement@0:0 function_definition@2:0"; got != want {
		t.Errorf("top level %q, want %q", got, want)
	}
	// The same parser then parses whole texts again.
	if whole := p.Parse(src); whole.ChildCount(whole.Root()) != 4 {
		t.Errorf("whole parse after a ranged one: %d statements", whole.ChildCount(whole.Root()))
	}
}

// giveUp is a context that reports itself done from its n-th Err call
// on: the answer changes while tree-sitter runs.
type giveUp struct {
	context.Context
	n     int
	calls int
}

func (c *giveUp) Done() <-chan struct{} { return make(chan struct{}) }

func (c *giveUp) Err() error {
	if c.calls++; c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

func TestParseContext(t *testing.T) {
	t.Parallel()
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := []byte(strings.Repeat("x = torch.nn.functional.relu(y, inplace=True)\n", 100000))

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.ParseContext(done, big); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled before: err = %v", err)
	}

	gu := &giveUp{Context: context.Background(), n: 3}
	tree, stopped, err := p.parse(gu, big, nil)
	if err == nil || tree != nil {
		t.Errorf("cancelled during the parse: tree %v, err %v", tree != nil, err)
	}
	if !stopped {
		t.Error("tree-sitter ran to the end: the progress callback did not stop it")
	}
	if gu.calls != 4 {
		t.Errorf("the context was asked %d times, want 4 (three polls, the third stops it, then the check after)", gu.calls)
	}

	// The parser recovers: the next parses are whole and right.
	for range 2 {
		tree, err := p.ParseContext(context.Background(), []byte("import torch\n"))
		if err != nil || tree.Len() != 4 || tree.HasError() {
			t.Fatalf("after a cancel: %d nodes, error %v, err %v", tree.Len(), tree.HasError(), err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if tree, err := p.ParseContext(ctx, []byte("x = 1\n")); err != nil || tree.HasError() {
			t.Fatalf("cancellable parse after a cancel: err %v", err)
		}
		cancel()
	}
}

// Visit's tree is the tree Parse makes, and it is emptied afterwards.
func TestVisit(t *testing.T) {
	t.Parallel()
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sources := testSources(t)
	// Over keepScratch nodes: Visit flattens into C memory.
	var big strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&big, "x%d = f(a, b.c[%d], \"s\")  # c\n", i, i)
	}
	sources["large, flattened into C memory"] = []byte(big.String())
	for name, src := range sources {
		want := p.Parse(src)
		if name == "large, flattened into C memory" && want.Len() <= keepScratch {
			t.Fatalf("the large source has %d nodes, not over %d", want.Len(), keepScratch)
		}
		var kept *Tree
		p.Visit(src, func(tree *Tree) {
			kept = tree
			if tree.Len() != want.Len() || tree.HasError() != want.HasError() {
				t.Errorf("%s: Visit has %d nodes (error %v), Parse %d (%v)", name, tree.Len(), tree.HasError(), want.Len(), want.HasError())
				return
			}
			for i := range want.Len() {
				if *tree.Node(int32(i)) != *want.Node(int32(i)) {
					t.Errorf("%s: node %d differs", name, i)
					return
				}
			}
		})
		if kept.Len() != 0 {
			t.Errorf("%s: the tree still has %d nodes after Visit", name, kept.Len())
		}
	}
}

func TestPoolConcurrent(t *testing.T) {
	t.Parallel()
	pool := NewPool(2)
	defer pool.Close()
	src := []byte("import torch.nn as nn\nm = nn.Linear(3, 4)\n")
	want := reference(t, src)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				tree, err := pool.Parse(src)
				if err != nil {
					errs <- err.Error()
					return
				}
				if tree.Len() != len(want) {
					errs <- "wrong node count"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A failed allocation in the C parser ends the process with a message that
// says so; it never hands tree-sitter a NULL to dereference. The test runs
// itself as a child that asks for more memory than any machine has.
func TestFailedAllocationAborts(t *testing.T) {
	if os.Getenv("TORCHLSP_SYNTAX_ALLOC_CHILD") == "1" {
		allocateThroughRuntime(1 << 62)
		fmt.Println("allocation returned")
		os.Exit(0)
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailedAllocationAborts$")
	cmd.Env = append(os.Environ(), "TORCHLSP_SYNTAX_ALLOC_CHILD=1")
	out, err := cmd.CombinedOutput()
	// Go's runtime turns the abort into its own crash report, exit status 2.
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "SIGABRT: abort") || strings.Contains(string(out), "SIGSEGV") {
		t.Fatalf("child ended with %v, want an abort; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "torchlsp: out of memory: the Python parser's malloc of 4611686018427387904 bytes failed") {
		t.Errorf("no message naming the failed allocation:\n%s", out)
	}
}
