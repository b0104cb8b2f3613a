package pyindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNameLimits builds an index over files that hold more names than the
// limits allow (lowered here; the real ones are 20,000 per file and a
// million in all): the names past a file's limit, and every name once the
// index's total is spent, are left out and counted as truncated, while the
// names before them still resolve.
func TestNameLimits(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(site, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	many := func(prefix string, n int) string {
		var b strings.Builder
		// Names inside compound statements and class bodies count too.
		b.WriteString("class Holder:\n")
		for i := range 50 {
			fmt.Fprintf(&b, "    m%d = %d\n", i, i)
		}
		b.WriteString("if True:\n")
		for i := range n {
			fmt.Fprintf(&b, "    %s%d = %d\n", prefix, i, i)
		}
		return b.String()
	}
	write("pkg/__init__.py", "")
	write("pkg/a.py", many("a", 500))
	write("pkg/b.py", many("b", 500))
	write("pkg/c.py", many("c", 500))
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.maxFileNames, ix.maxNames = 300, 700
	if err := ix.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := ix.Stats()
	if st.Truncated != 3 {
		t.Errorf("Stats.Truncated = %d, want 3 (every file is over its limit)", st.Truncated)
	}
	total := 0
	for _, f := range ix.files {
		if d := f.data.Load(); d != nil {
			n := countNames(d.bindings)
			total += n
			if n > ix.maxFileNames+1 { // the statement that crosses the limit is kept whole
				t.Errorf("%s keeps %d names, limit %d", f.rel, n, ix.maxFileNames)
			}
		}
	}
	if total > ix.maxNames+3*ix.maxFileNames || total == 0 {
		t.Errorf("the index keeps %d names, limit %d", total, ix.maxNames)
	}
	resolved := 0
	for _, name := range []string{"pkg.a.Holder.m3", "pkg.a.a5", "pkg.b.b5", "pkg.c.c5"} {
		if _, err := ix.Resolve(name); err == nil {
			resolved++
		}
	}
	if resolved < 2 {
		t.Errorf("only %d of the names before the limits resolve", resolved)
	}
	for _, name := range []string{"pkg.a.a499", "pkg.b.b499", "pkg.c.c499"} {
		if _, err := ix.Resolve(name); err == nil {
			t.Errorf("%s resolves, though it is past its file's limit", name)
		}
	}
}

// TestSiteDirThroughALink opens an index whose site dir is a symbolic
// link to the real one: it indexes the tree the link points at, and
// answers with paths under the link.
func TestSiteDirThroughALink(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	if err := os.MkdirAll(filepath.Join(real, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "pkg", "__init__.py"), []byte("def f():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "site")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(link, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if st := ix.Stats(); st.Files != 1 {
		t.Fatalf("Stats = %+v, want the one file behind the link", st)
	}
	r, err := ix.Resolve("pkg.f")
	if err != nil {
		t.Fatal(err)
	}
	if r.Symbol.File != "pkg/__init__.py" || ix.SiteDir() != link {
		t.Errorf("pkg.f is in %s under %s, want pkg/__init__.py under %s", r.Symbol.File, ix.SiteDir(), link)
	}
}

// TestNotParsedCounted: a file whose parse stops at its memory limit (a
// million tiny statements in one block, under the 4 MiB a file: no
// top-level statement to parse it a chunk at a time by) has no names in
// the index and is counted, so that the session can say so; the
// package's other files answer. The same statements at the top level are
// parsed a chunk at a time, each under the limit, and indexed, also when
// a chunk holds an error and the whole text is over the limit.
func TestNotParsedCounted(t *testing.T) {
	t.Parallel()
	site := writeSite(t, map[string]string{
		"pkg/__init__.py": "def kept():\n    pass\n",
		"pkg/tiny.py":     "def lost():\n    pass\nif True:\n" + strings.Repeat("    a=b\n", 500_000),
		"pkg/chunked.py":  "def found():\n    pass\n" + strings.Repeat("f()\n", 1_000_000) + "def last():\n    pass\n",
		// Cut mid-statement: its last chunk holds an error, and the whole
		// text is over the parse's limit; the chunks answer.
		"pkg/cut.py": "def found():\n    pass\n" + strings.Repeat("f()\n", 1_000_000) + "x = (",
	})
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.NotParsed != 1 {
		t.Errorf("Stats.NotParsed = %d, want 1", st.NotParsed)
	}
	if _, err := ix.Resolve("pkg.kept"); err != nil {
		t.Errorf("pkg.kept: %v", err)
	}
	if _, err := ix.Resolve("pkg.tiny.lost"); err == nil {
		t.Error("pkg.tiny.lost resolved, from a file whose parse stopped")
	}
	for _, name := range []string{"pkg.chunked.found", "pkg.chunked.last", "pkg.cut.found"} {
		if _, err := ix.Resolve(name); err != nil {
			t.Errorf("%s, of a module parsed a chunk at a time: %v", name, err)
		}
	}
}
