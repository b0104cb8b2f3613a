package syntax

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Valid Python made of tiny statements takes tree-sitter about 200 bytes
// of C memory a byte of text; such a parse stops at MemoryLimit instead,
// whichever way it is asked for, and the parser parses whole afterwards.
func TestParseStopsAtItsMemoryLimit(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("C memory is counted with glibc's malloc_usable_size")
	}
	p := newTestParser(t)
	for _, tc := range []struct {
		name string
		src  string
	}{
		{"stacked decorators", strings.Repeat("@w\n", 1_300_000) + "def f(): pass\n"},
		{"tiny statements", strings.Repeat("a=b\n", 1_000_000)},
		{"broken on every line", strings.Repeat("def f(:\n  x = [1,\n", 200_000)},
	} {
		src := []byte(tc.src)
		limit := MemoryLimit(len(src))
		check := func(how string, tree *Tree) {
			t.Helper()
			if !tree.GaveUp() || !tree.OverMemory() || tree.Len() != 0 {
				t.Errorf("%s, %s: gave up %v, over memory %v, %d nodes; want an empty tree over its %d MB",
					tc.name, how, tree.GaveUp(), tree.OverMemory(), tree.Len(), limit>>20)
			}
			// The callback that stops the parse runs every 100 parse
			// operations: it passes the limit by little.
			if peak := tree.ParseMemory(); peak > limit+limit/8 {
				t.Errorf("%s, %s: the parse held %d MB, limit %d MB", tc.name, how, peak>>20, limit>>20)
			}
		}
		check("Parse", p.Parse(src))
		p.Visit(src, func(tree *Tree) { check("Visit", tree) })
	}
	if tree := p.Parse([]byte("import torch\n")); tree.Len() != 4 || tree.GaveUp() || tree.OverMemory() {
		t.Errorf("after giving up: %d nodes, gave up %v, over memory %v", tree.Len(), tree.GaveUp(), tree.OverMemory())
	}
}

// A tree whose C memory fits but whose flattened nodes would pass the
// limit gives up too: as Go memory they cost about as much again.
func TestFlattenCountsTowardsTheLimit(t *testing.T) {
	t.Parallel()
	p := newTestParser(t)
	src := []byte(strings.Repeat("a=b\n", 20_000))
	whole := p.Parse(src)
	if whole.GaveUp() || whole.ParseMemory() == 0 {
		t.Fatalf("20,000 statements: gave up %v, %d bytes of C memory", whole.GaveUp(), whole.ParseMemory())
	}
	p.memoryLimit = func(int) int64 { return whole.ParseMemory() + 1 }
	if tree := p.Parse(src); !tree.OverMemory() || tree.Len() != 0 {
		t.Errorf("limit just over the C tree: over memory %v, %d nodes; want it to give up for the flattened nodes", tree.OverMemory(), tree.Len())
	}
	p.memoryLimit = nil
}

// Real Python stays well inside the limit: every file of the fixture torch
// and of this machine's standard library parses.
func TestRealPythonParsesWithinTheLimit(t *testing.T) {
	t.Parallel()
	p := newTestParser(t)
	var dirs []string
	for _, d := range []string{"../../testdata/site/torch", "/usr/lib/python3.11", "/usr/lib/python3.13"} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	files, worst := 0, 0.0
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil || len(src) > 4<<20 {
				return nil
			}
			tree := p.Parse(src)
			files++
			if tree.OverMemory() {
				t.Errorf("%s (%d bytes) gave up at its memory limit (%d MB)", path, len(src), MemoryLimit(len(src))>>20)
			}
			if r := float64(tree.ParseMemory()) / float64(max(len(src), 1)); len(src) > 64<<10 && r > worst {
				worst = r
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files == 0 {
		t.Fatal("no Python files found")
	}
	t.Logf("%d files; the most C memory a byte of text in a file over 64 KB: %.1f", files, worst)
}
