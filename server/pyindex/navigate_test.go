package pyindex

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeSite writes files (path → text) under a new site dir.
func writeSite(t testing.TB, files map[string]string) string {
	t.Helper()
	site := t.TempDir()
	for rel, text := range files {
		p := filepath.Join(site, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return site
}

// definitionOf asks for the definition of the n-th (0-based) occurrence
// of name in file rel.
func definitionOf(t testing.TB, ix *Index, rel, name string, n int) (Definition, error) {
	t.Helper()
	src, _ := navSource(t, ix, rel)
	text := string(src.Table.Tree().Src())
	off := -1
	for i, from := 0, 0; i <= n; i++ {
		j := indexWord(text[from:], name)
		if j < 0 {
			t.Fatalf("%s: no occurrence %d of %s", rel, n, name)
		}
		off, from = from+j, from+j+len(name)
	}
	return ix.DefinitionAt(src, off)
}

// indexWord finds name as a whole word.
func indexWord(s, name string) int {
	for from := 0; ; {
		i := strings.Index(s[from:], name)
		if i < 0 {
			return -1
		}
		i += from
		before := i == 0 || !isWordByte(s[i-1])
		after := i+len(name) == len(s) || !isWordByte(s[i+len(name)])
		if before && after {
			return i
		}
		from = i + 1
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// TestDefinitionAtBounded: shapes that go round in circles (import and
// star-import cycles, a class hierarchy that is a cycle, an __init__ that
// re-exports itself) answer or decline, within maxNavSteps lookups; none
// hangs.
func TestDefinitionAtBounded(t *testing.T) {
	t.Parallel()
	site := writeSite(t, map[string]string{
		"cyc/__init__.py": "from cyc import *\nfrom . import missing\nfrom cyc import again\n__all__ = ['again', 'missing']\n",
		"cyc/a.py":        "from .b import f\nf()\n",
		"cyc/b.py":        "from .a import f\n",
		"cyc/s1.py":       "from .s2 import *\nname\n",
		"cyc/s2.py":       "from .s1 import *\n",
		"cyc/c.py":        "from .d import D\n\n\nclass C(D):\n    pass\n\n\nC().attr\nC.attr\n",
		"cyc/d.py":        "from .c import C\n\n\nclass D(C):\n    pass\n",
		"cyc/e.py":        "class E(E):\n    x = 1\n\n\nE().x\n",
		"cyc/r.py":        "x = x.y\ny = y\nz = z()\nx.a\ny.b\nz.c\n",
		"cyc/self.py":     "import cyc.self as me\nme.me.me.thing\nthing = me.thing\n",
	})
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, name string
		n          int
		want       string // "file:line" of the answer, or "" to decline
	}{
		{"cyc/a.py", "f", 1, ""},
		{"cyc/b.py", "f", 0, ""},
		{"cyc/s1.py", "name", 0, ""},
		{"cyc/c.py", "attr", 0, ""},
		{"cyc/c.py", "attr", 1, ""},
		{"cyc/d.py", "C", 1, "cyc/c.py:3"},
		{"cyc/e.py", "x", 1, ""},
		{"cyc/r.py", "a", 0, ""},
		{"cyc/r.py", "b", 0, ""},
		{"cyc/r.py", "c", 0, ""},
		{"cyc/__init__.py", "missing", 0, ""},
		{"cyc/__init__.py", "again", 0, ""},
		{"cyc/self.py", "thing", 0, "cyc/self.py:2"},
		{"cyc/self.py", "me", 3, "cyc/self.py:0"},
	}
	for _, tt := range tests {
		d, err := definitionOf(t, ix, tt.file, tt.name, tt.n)
		got := ""
		if err == nil {
			got = d.Symbol.File + ":" + strconv.Itoa(d.Symbol.Line)
		} else if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s %s #%d: %v, want an answer or ErrNotFound", tt.file, tt.name, tt.n, err)
		}
		if got != tt.want {
			t.Errorf("%s %s #%d: %q (%v), want %q", tt.file, tt.name, tt.n, got, err, tt.want)
		}
	}
}

// TestDefinitionAtLongFunction: a file holding one 40,000-line function
// answers a name at its end with the binding on the line before: lookups
// search a scope's bindings, they do not walk them. (40,000 lines of
// "x = x + 1" parse within syntax.MemoryLimit; 200,000 would not.)
func TestDefinitionAtLongFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("parses a 560 KB file")
	}
	t.Parallel()
	const lines = 40_000
	var b strings.Builder
	b.WriteString("def long(x):\n")
	for range lines {
		b.WriteString("    x = x + 1\n")
	}
	b.WriteString("    return x\n")
	site := writeSite(t, map[string]string{"big/__init__.py": "", "big/long.py": b.String()})
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := definitionOf(t, ix, "big/long.py", "x", 2*lines+1) // return x
	if err != nil {
		t.Fatal(err)
	}
	if !d.InSource || d.Symbol.Line != lines {
		t.Fatalf("return x names line %d (in source %v), want %d", d.Symbol.Line, d.InSource, lines)
	}
}

// TestTablesBounded: the index keeps the name tables of at most maxTables
// files, of at most maxTableSource bytes of source in all, and parses no
// larger file into one.
func TestTablesBounded(t *testing.T) {
	t.Parallel()
	files := map[string]string{"big/huge.py": "x = 1\n" + strings.Repeat("#", maxTableSource)}
	for i := range 6 {
		files["big/m"+strconv.Itoa(i)+".py"] = "class C:\n    def __init__(self):\n        self.a = 1\n" + strings.Repeat("# filler\n", maxTableSource/30)
	}
	site := writeSite(t, files)
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ix.files {
		tab := ix.table(f)
		if f.rel == "big/huge.py" && tab != nil {
			t.Errorf("%s (%d bytes) was parsed into a table", f.rel, f.size)
		}
		ix.tables.mu.Lock()
		n, bytes := len(ix.tables.order), ix.tables.bytes
		ix.tables.mu.Unlock()
		if n > maxTables || bytes > maxTableSource {
			t.Fatalf("after %s: %d tables of %d bytes, want at most %d of %d", f.rel, n, bytes, maxTables, maxTableSource)
		}
	}
}
