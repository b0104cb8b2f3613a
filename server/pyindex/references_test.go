package pyindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// The fixture of the reference, call and symbol queries: testdata/xref
// holds a package xr whose names are reached every way the rules allow
// (relative and absolute imports, an import alias, a star import with
// __all__, a re-export in __init__.py, a module alias, a rebinding
// fetch = get_obj, self.method through the class and a subclass), one
// shadowing definition of the same name, and files that name nothing.
const xrefSite = "testdata/xref"

// place is an identifier of the fixture: the word on the first line of
// rel that holds line.
type place struct{ rel, line, word string }

func (p place) String() string { return p.rel + " " + p.word + " in " + p.line }

// pos finds p as "rel:LINE:COL" (1-based) and its 0-based line and byte
// column.
func (p place) pos(t testing.TB) (string, int, int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(xrefSite, filepath.FromSlash(p.rel)))
	if err != nil {
		t.Fatal(err)
	}
	text, anchored := strings.CutPrefix(p.line, "^")
	for i, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, text) || anchored && !strings.HasPrefix(l, text) {
			continue
		}
		j := strings.Index(l, text) + indexWord(text, p.word)
		if indexWord(text, p.word) < 0 {
			t.Fatalf("%v: the line does not hold the word", p)
		}
		return fmt.Sprintf("%s:%d:%d", p.rel, i+1, j+1), i, j
	}
	t.Fatalf("%v: no such line", p)
	return "", 0, 0
}

// definitionAtPlace asks DefinitionAt about a place.
func definitionAtPlace(t testing.TB, ix *Index, p place) Definition {
	t.Helper()
	src, lines := navSource(t, ix, p.rel)
	_, line, col := p.pos(t)
	off, _ := lines.Offset(src.Table.Tree().Src(), syntax.Pos{Line: line, Col: col})
	d, err := ix.DefinitionAt(src, off)
	if err != nil {
		t.Fatalf("%v: %v", p, err)
	}
	return d
}

func openXref(t testing.TB) *Index {
	t.Helper()
	ix, err := Open(xrefSite, filepath.Join(t.TempDir(), "index.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

func refStrings(refs []Reference) []string {
	var out []string
	for _, r := range refs {
		s := fmt.Sprintf("%s:%d:%d", r.File, r.Span.Start.Line+1, r.Span.Start.Col+1)
		if r.File == "" {
			s = fmt.Sprintf("%s:%d:%d", filepath.Base(r.Path), r.Span.Start.Line+1, r.Span.Start.Col+1)
		}
		out = append(out, s)
	}
	return out
}

func placeStrings(t testing.TB, ps []place) []string {
	var out []string
	for _, p := range ps {
		s, _, _ := p.pos(t)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func TestReferences(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	getObj := place{"xr/core.py", "def get_obj(", "get_obj"}
	getObjRefs := []place{
		{"xr/__init__.py", "from .core import get_obj", "get_obj"},
		{"xr/core.py", "return get_obj(None", "get_obj"},
		{"xr/core.py", "self.obj = get_obj(", "get_obj"},
		{"xr/core.py", "fetch = get_obj", "get_obj"},
		{"xr/use_alias.py", "import get_obj as go", "get_obj"},
		{"xr/use_alias.py", "import get_obj as go", "go"},
		{"xr/use_alias.py", "return go(", "go"},
		{"xr/use_alias.py", "core.get_obj(", "get_obj"},
		{"xr/use_star.py", "return get_obj(", "get_obj"},
		{"xr/use_reexport.py", "xr.get_obj(", "get_obj"},
		{"xr/use_reexport.py", "xc.get_obj(", "get_obj"},
		{"xr/use_reexport.py", "from xr.core import fetch", "fetch"},
		{"xr/use_reexport.py", "fetch(5", "fetch"},
	}
	tests := []struct {
		name     string
		at       place // where the query starts (any name of the definition)
		withDecl bool
		want     []place
	}{
		{"function, from its def", getObj, false, getObjRefs},
		{"function, from a call through a module alias", place{"xr/use_reexport.py", "xc.get_obj(", "get_obj"}, false, getObjRefs},
		{"function, with its declaration", getObj, true, append(slices.Clone(getObjRefs), getObj)},
		{"method, through self and a subclass", place{"xr/core.py", "def step(", "step"}, false, []place{
			{"xr/core.py", "return self.step()", "step"},
			{"xr/sub.py", "return self.step()", "step"},
		}},
		{"method, through an instance", place{"xr/core.py", "def run(", "run"}, false, []place{
			{"xr/use_reexport.py", "return m.run()", "run"},
		}},
		{"class", place{"xr/core.py", "class Manager", "Manager"}, false, []place{
			{"xr/__init__.py", "get_obj, Manager", "Manager"},
			{"xr/sub.py", "from .core import Manager", "Manager"},
			{"xr/sub.py", "class Sub(Manager)", "Manager"},
			{"xr/use_reexport.py", "m = xr.Manager()", "Manager"},
		}},
		{"the shadowing definition has its own", place{"xr/shadow.py", "def get_obj", "get_obj"}, false, []place{
			{"xr/shadow.py", "^get_obj()", "get_obj"},
		}},
		{"instance attribute", place{"xr/core.py", "self.obj =", "obj"}, true, []place{
			{"xr/core.py", "self.obj =", "obj"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := definitionAtPlace(t, ix, tt.at)
			got, err := ix.References(context.Background(), d.Symbol, ReferenceOptions{IncludeDeclaration: tt.withDecl})
			if err != nil {
				t.Fatal(err)
			}
			g, w := refStrings(got.Refs), placeStrings(t, tt.want)
			slices.Sort(g)
			if !slices.Equal(g, w) {
				t.Errorf("references of %s:\n got %q\nwant %q", d.Symbol.Qualname, g, w)
			}
			if got.Truncated {
				t.Errorf("truncated")
			}
		})
	}
}

// TestReferencesParseOnlyCandidates: the postings keep a query from
// parsing the files that never name what it looks for.
func TestReferencesParseOnlyCandidates(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	d := definitionAtPlace(t, ix, place{"xr/shadow.py", "def get_obj", "get_obj"})
	got, err := ix.References(context.Background(), d.Symbol, ReferenceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The files naming get_obj: __init__, core, use_alias, use_star,
	// use_reexport, shadow; not sub, unrelated.
	if got.Files != 6 {
		t.Errorf("searched %d files, want the 6 that name get_obj", got.Files)
	}
	// From the cache file, the same.
	re, err := Open(xrefSite, ix.cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	if !re.Stats().FromCache {
		t.Fatal("the cache file was not used")
	}
	got2, err := re.References(context.Background(), d.Symbol, ReferenceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got2.Files != got.Files || !slices.Equal(refStrings(got2.Refs), refStrings(got.Refs)) {
		t.Errorf("from the cache: %d files %q, want %d files %q", got2.Files, refStrings(got2.Refs), got.Files, refStrings(got.Refs))
	}
	if n := re.Stats().Parsed; n != 0 {
		t.Errorf("%d files parsed into the index, want none: the postings come from the cache", n)
	}
}

// TestReferencesInSources: open documents are searched as they are: a
// user's file besides the index, and an edited copy of a file of the
// index instead of the file.
func TestReferencesInSources(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	user := parseSource(t, "/work/user/train.py", "", "from xr import get_obj as g\nimport xr.core\n\ng(1)\nxr.core.get_obj(2)\n")
	edited := parseSource(t, filepath.Join(ix.SiteDir(), "xr/unrelated.py"), "xr/unrelated.py", "from .core import get_obj\n\n\ndef nothing_here():\n    return get_obj(1, 2)\n")
	edited.Module = "xr.unrelated"
	d := definitionAtPlace(t, ix, place{"xr/core.py", "def get_obj(", "get_obj"})
	got, err := ix.References(context.Background(), d.Symbol, ReferenceOptions{Sources: []Source{user, edited}})
	if err != nil {
		t.Fatal(err)
	}
	var inUser, inEdited []string
	for _, r := range got.Refs {
		switch {
		case r.File == "":
			inUser = append(inUser, fmt.Sprintf("%d:%d", r.Span.Start.Line+1, r.Span.Start.Col+1))
		case r.File == "xr/unrelated.py":
			inEdited = append(inEdited, fmt.Sprintf("%d:%d", r.Span.Start.Line+1, r.Span.Start.Col+1))
		}
	}
	if want := []string{"1:16", "1:27", "4:1", "5:9"}; !slices.Equal(inUser, want) {
		t.Errorf("in the user's file: %q, want %q", inUser, want)
	}
	if want := []string{"1:19", "5:12"}; !slices.Equal(inEdited, want) {
		t.Errorf("in the edited file: %q, want %q", inEdited, want)
	}
}

// parseSource makes a Source of text.
func parseSource(t testing.TB, path, rel, text string) Source {
	t.Helper()
	tree, err := syntax.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return Source{Path: path, Rel: rel, Table: pyscope.New(tree)}
}

func TestCallers(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	d := definitionAtPlace(t, ix, place{"xr/core.py", "def get_obj(", "get_obj"})
	calls, truncated, err := ix.Callers(context.Background(), d.Symbol, ReferenceOptions{})
	if err != nil || truncated {
		t.Fatal(err, truncated)
	}
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%s %s %d", c.From.Kind, c.From.Qualname, len(c.Spans)))
	}
	want := []string{
		"function xr.core.helper 1",
		"function xr.core.Manager.__init__ 1",
		"function xr.use_alias.a 1",
		"function xr.use_alias.b 1",
		"module xr.use_reexport 3",
		"function xr.use_star.c 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("callers:\n got %q\nwant %q", got, want)
	}
}

func TestCallees(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	tests := []struct {
		at   place
		want []string
	}{
		{place{"xr/core.py", "def run(", "run"}, []string{"function xr.core.Manager.step 1", "function xr.core.helper 1"}},
		{place{"xr/use_reexport.py", "def d(", "d"}, []string{"class xr.core.Manager 1", "function xr.core.Manager.run 1"}},
		{place{"xr/use_alias.py", "def a(", "a"}, []string{"function xr.core.get_obj 1"}},
		{place{"xr/use_alias.py", "def b(", "b"}, []string{"function xr.core.get_obj 1"}},
		{place{"xr/sub.py", "def go(", "go"}, []string{"function xr.core.Manager.step 1"}},
		// inner's call is inner's, not nested's; the decorator is a call
		// of the class body, not of nested.
		{place{"xr/sub.py", "def nested(", "nested"}, []string{"function xr.sub.Sub.nested.<locals>.inner 1"}},
		{place{"xr/sub.py", "class Sub", "Sub"}, nil},
	}
	for _, tt := range tests {
		d := definitionAtPlace(t, ix, tt.at)
		calls, err := ix.Callees(context.Background(), d.Symbol, nil)
		if err != nil {
			t.Errorf("%v: %v", tt.at, err)
			continue
		}
		var got []string
		for _, c := range calls {
			got = append(got, fmt.Sprintf("%s %s %d", c.To.Kind, c.To.Qualname, len(c.Spans)))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("callees of %v:\n got %q\nwant %q", tt.at, got, tt.want)
		}
	}
	d := definitionAtPlace(t, ix, place{"xr/core.py", "fetch = get_obj", "fetch"})
	if _, err := ix.Callees(context.Background(), d.Symbol, nil); err == nil {
		t.Error("callees of a variable: no error")
	}
}

func TestSymbols(t *testing.T) {
	t.Parallel()
	ix := openXref(t)
	tests := []struct {
		query string
		limit int
		want  []string
	}{
		{"get_obj", 10, []string{"function xr.core.get_obj 0", "function xr.shadow.get_obj 0"}},
		{"GET_OBJ", 10, []string{"function xr.core.get_obj 1", "function xr.shadow.get_obj 1"}},
		{"Mana", 10, []string{"class xr.core.Manager 2"}},
		{"step", 10, []string{"function xr.core.Manager.step 0"}},
		{"core.get", 10, []string{"function xr.core.get_obj 2"}},
		{"use_", 10, []string{"module xr.use_star 2", "module xr.use_alias 2", "module xr.use_reexport 2"}},
		{"hlpr", 10, []string{"function xr.core.helper 5", "function xr.sub.helper_of_inner 5"}},
		{"get_obj", 1, []string{"function xr.core.get_obj 0"}},
		{"", 10, nil},
	}
	for _, tt := range tests {
		hits, err := ix.Symbols(context.Background(), NewSymbolQuery(tt.query), tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, fmt.Sprintf("%s %s %d", h.Symbol.Kind, h.Symbol.Qualname, h.Rank))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("symbols %q:\n got %q\nwant %q", tt.query, got, tt.want)
		}
	}
}

// TestReferencesBounded: shapes that go round in circles (import and
// star-import cycles, a class hierarchy that is a cycle, an __init__ that
// re-exports itself, rebindings that name each other) answer or decline
// for every definition, each within its bounds; none hangs.
func TestReferencesBounded(t *testing.T) {
	t.Parallel()
	site := writeSite(t, map[string]string{
		"cyc/__init__.py": "from cyc import *\nfrom . import missing\nfrom cyc import again\n__all__ = ['again', 'missing']\n",
		"cyc/a.py":        "from .b import f\nf()\n\n\ndef g():\n    return g()\n",
		"cyc/b.py":        "from .a import f\n",
		"cyc/s1.py":       "from .s2 import *\nname\n",
		"cyc/s2.py":       "from .s1 import *\n",
		"cyc/c.py":        "from .d import D\n\n\nclass C(D):\n    def m(self):\n        return self.m()\n\n\nC().attr\nC.attr\n",
		"cyc/d.py":        "from .c import C\n\n\nclass D(C):\n    pass\n",
		"cyc/e.py":        "class E(E):\n    x = 1\n\n\nE().x\n",
		"cyc/r.py":        "x = y\ny = x\nz = z\nx()\ny()\n",
		"cyc/self.py":     "import cyc.self as me\nme.me.me.thing\nthing = me.thing\n",
	})
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range ix.files {
		src, _ := navSource(t, ix, f.rel)
		for _, occ := range src.Table.Occurrences() {
			if occ.Role != pyscope.RoleBind {
				continue
			}
			d, err := ix.DefinitionAt(src, src.Table.Tree().Start(occ.Node))
			if err != nil || d.Symbol.File == "" {
				continue
			}
			refs, err := ix.References(ctx, d.Symbol, ReferenceOptions{IncludeDeclaration: true})
			if err != nil {
				t.Errorf("references of %s: %v", d.Symbol.Qualname, err)
			}
			if len(refs.Refs) > MaxReferences {
				t.Errorf("references of %s: %d", d.Symbol.Qualname, len(refs.Refs))
			}
			if _, _, err := ix.Callers(ctx, d.Symbol, ReferenceOptions{}); err != nil {
				t.Errorf("callers of %s: %v", d.Symbol.Qualname, err)
			}
			if d.Symbol.Kind == KindFunction || d.Symbol.Kind == KindClass {
				if _, err := ix.Callees(ctx, d.Symbol, nil); err != nil {
					t.Errorf("callees of %s: %v", d.Symbol.Qualname, err)
				}
			}
		}
	}
	// The recursive function's references include its own call.
	d := definitionAtPlaceIn(t, ix, "cyc/a.py", "g", 0)
	refs, err := ix.References(ctx, d.Symbol, ReferenceOptions{})
	if err != nil || len(refs.Refs) != 1 {
		t.Errorf("references of the recursive g: %v %v, want its call", refStrings(refs.Refs), err)
	}
}

// definitionAtPlaceIn asks DefinitionAt about the n-th occurrence of name
// in rel.
func definitionAtPlaceIn(t testing.TB, ix *Index, rel, name string, n int) Definition {
	t.Helper()
	d, err := definitionOf(t, ix, rel, name, n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReferencesLongFunction: a 40,000-line function whose every line
// calls the same function gives MaxReferences references, marked cut;
// its callees stop at maxCallees calls. (It parses within
// syntax.MemoryLimit; 200,000 lines would not.)
func TestReferencesLongFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("parses a 640 KB file")
	}
	t.Parallel()
	const lines = 40_000
	var b strings.Builder
	b.WriteString("def step(x):\n    return x\n\n\ndef long(x):\n")
	for range lines {
		b.WriteString("    x = step(x)\n")
	}
	b.WriteString("    return x\n")
	site := writeSite(t, map[string]string{"big/__init__.py": "", "big/long.py": b.String()})
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	step, err := ix.Resolve("big.long.step")
	if err != nil {
		t.Fatal(err)
	}
	refs, err := ix.References(ctx, step.Symbol, ReferenceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !refs.Truncated || len(refs.Refs) != MaxReferences {
		t.Errorf("%d references (cut: %v), want %d, cut", len(refs.Refs), refs.Truncated, MaxReferences)
	}
	long, err := ix.Resolve("big.long.long")
	if err != nil {
		t.Fatal(err)
	}
	calls, err := ix.Callees(ctx, long.Symbol, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || len(calls[0].Spans) != maxCallees {
		t.Errorf("callees: %d, want step called %d times", len(calls), maxCallees)
	}
}
