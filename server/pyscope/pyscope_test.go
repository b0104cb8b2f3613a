package pyscope

import (
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// marked strips «use» and ‹def› from code and returns the text with the
// byte offsets where each marked name starts; -1 when there is no ‹def›.
func marked(t *testing.T, code string) (src string, use, def int) {
	t.Helper()
	var b strings.Builder
	use, def = -1, -1
	for _, r := range code {
		switch r {
		case '«':
			use = b.Len()
		case '‹':
			def = b.Len()
		case '»', '›':
		default:
			b.WriteRune(r)
		}
	}
	if use < 0 {
		t.Fatalf("no «use» in %q", code)
	}
	return b.String(), use, def
}

func build(t *testing.T, src string) *Table {
	t.Helper()
	tree, err := syntax.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return New(tree)
}

// lookupAt looks up the identifier at off as a read.
func lookupAt(t *testing.T, tab *Table, off int, exports Exports) (Occurrence, Result) {
	t.Helper()
	occ, ok := tab.OccurrenceAt(off)
	if !ok {
		t.Fatalf("no identifier at %d", off)
	}
	tree := tab.Tree()
	return occ, tab.Lookup(tree.Text(occ.Node), occ.Scope, uint32(tree.Start(occ.Node)), exports)
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, code string }{
		{"parameter", "def f(‹a›):\n    return «a»\n"},
		{"last binding before the read", "x = 1\n‹x› = 2\nprint(«x»)\nx = 3\n"},
		{"a loop's binding after the read", "def f(r):\n    for i in r:\n        if i:\n            print(«y»)\n        ‹y› = i\n"},
		{"class bodies do not enclose methods", "‹x› = 1\nclass C:\n    x = 2\n    def m(self):\n        return «x»\n"},
		{"a class body reads its own names", "class C:\n    ‹x› = 1\n    y = «x»\n"},
		{"a class body's later name is the module's", "‹x› = 0\nclass C:\n    y = «x»\n    x = 1\n"},
		{"comprehension variable", "[«i» for ‹i› in range(3)]\n"},
		{"first iterable in the enclosing scope", "‹i› = [1]\n[i for i in «i»]\n"},
		{"comprehension in a class body sees the class only in its first iterable", "‹v› = 0\nclass C:\n    v = 1\n    w = [«v» for _ in range(2)]\n"},
		{"global declared in another function counts only without a module binding", "‹g› = 1\ndef f():\n    global g\n    g = 2\ndef h():\n    return «g»\n"},
		{"global binding made only in a function", "def f():\n    global g\n    ‹g› = 2\ndef h():\n    return «g»\n"},
		{"global statement names the module's", "‹g› = 1\ndef f():\n    global «g»\n"},
		{"nonlocal binds in the enclosing function, which binds it too", "def f():\n    def g():\n        nonlocal x\n        x = 2\n    ‹x›: int\n    return «x»\n"},
		{"a nonlocal's binding is the enclosing function's", "def f():\n    ‹x› = 1\n    def g():\n        nonlocal x\n        x = 2\n        return «x»\n"},
		{"closure", "def f():\n    ‹x› = 1\n    def g():\n        return «x»\n    return g\n"},
		{"a function body sees the last module binding", "def f():\n    return «h»()\ndef h(): pass\n‹h› = 3\n"},
		{"a function body prefers a binding outside TYPE_CHECKING", "‹X› = 1\nif TYPE_CHECKING:\n    X = 2\ndef f():\n    return «X»\n"},
		{"walrus in a comprehension binds the enclosing function", "def f(r):\n    [(‹y› := i) for i in r]\n    return «y»\n"},
		{"default values are evaluated outside", "‹d› = 1\ndef f(d=«d»):\n    return d\n"},
		{"annotations are evaluated outside", "‹T› = int\nclass C:\n    def m(self, T: «T») -> T:\n        return T\n"},
		{"a decorator names the earlier def", "class C:\n    @property\n    def ‹p›(self):\n        return 1\n    @«p».setter\n    def p(self, v):\n        pass\n"},
		{"recursion names the def", "def ‹f›(n):\n    return «f»(n - 1)\n"},
		{"except alias", "try:\n    pass\nexcept ValueError as ‹e›:\n    print(«e»)\n"},
		{"with alias", "with open('x') as ‹fh›:\n    «fh».read()\n"},
		{"import binds the top package", "import ‹os›.path\n«os».path.join('a')\n"},
		{"import as binds the alias", "import numpy as ‹np›\n«np».ones(1)\n"},
		{"from import", "from m import ‹a›\n«a»()\n"},
		{"from import as", "from m import a as ‹b›\n«b»()\n"},
		{"augmented assignment reads the earlier binding", "‹x› = 1\nx += 1\nprint(«x»)\n"},
		{"augmented assignment target", "def f():\n    ‹x› = 1\n    «x» += 1\n"},
		{"lambda parameter", "f = lambda ‹q›, r=1: «q» + r\n"},
		{"match capture", "match p:\n    case [‹a›, *rest]:\n        print(«a»)\n"},
		{"match as", "match p:\n    case Point(x=0) as ‹pt›:\n        print(«pt»)\n"},
		{"class name inside its methods", "class ‹C›:\n    def m(self):\n        return «C»()\n"},
		{"for target", "for ‹k›, v in d.items():\n    print(«k»)\n"},
		{"tuple assignment", "‹a›, b = 1, 2\nprint(«a»)\n"},
		{"chained assignment", "‹a› = b = 1\nprint(«a»)\n"},
		{"annotated declaration", "‹x›: int\nprint(«x»)\n"},
		{"builtin", "print(«len»)\n"},
		{"a local deleted and read before: unbound", "x = 1\ndef f():\n    print(«x»)\n    del x\n"},
		{"a name only augmented in a function: unbound", "x = 1\ndef f():\n    «x» += 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src, use, def := marked(t, tt.code)
			tab := build(t, src)
			occ, res := lookupAt(t, tab, use, nil)
			if occ.Role != RoleRead && occ.Role != RoleDeclared && occ.Role != RoleModule {
				t.Fatalf("the use is a %s", occ.Role)
			}
			got := -1
			if res.Binding >= 0 {
				got = tab.Tree().Start(tab.Binding(res.Binding).Node)
			}
			if got != def {
				t.Fatalf("binds at %s, want %s\n%s", at(src, got), at(src, def), src)
			}
		})
	}
}

func at(src string, off int) string {
	if off < 0 {
		return "nothing"
	}
	return syntax.NewLines([]byte(src)).Pos(off).String()
}

func TestLookupStarImports(t *testing.T) {
	t.Parallel()
	src, use, def := marked(t, "from a import *\nx = 1\n‹from› b import *\nprint(«name»)\n")
	tab := build(t, src)
	_, res := lookupAt(t, tab, use, func(star *Binding, name string) bool { return star.Module == "b" && name == "name" })
	if res.Binding < 0 || tab.Binding(res.Binding).Kind != BindStar || tab.Binding(res.Binding).Module != "b" {
		t.Fatalf("got %+v, want the star import of b", res)
	}
	if stmt := tab.Binding(res.Binding).Stmt; tab.Tree().Start(stmt) != def {
		t.Fatalf("the star import at %d, want %d", tab.Tree().Start(stmt), def)
	}
	_, res = lookupAt(t, tab, use, nil)
	if res.Binding >= 0 || !res.Global {
		t.Fatalf("without exports: %+v, want a global with no binding", res)
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	src := "import a.b as c\nfrom .m import n as o, p\nx.y(z=1)\ndef f():\n    global g\n"
	tab := build(t, src)
	tr := tab.Tree()
	want := map[string]Role{
		"a": RoleModule, "b": RoleModule, "c": RoleBind, "m": RoleModule, "n": RoleImported, "o": RoleBind,
		"p": RoleImported, "x": RoleRead, "y": RoleAttribute, "z": RoleKeyword, "f": RoleBind, "g": RoleDeclared,
	}
	for _, occ := range tab.Occurrences() {
		name := tr.Text(occ.Node)
		if w, ok := want[name]; !ok || occ.Role != w {
			t.Errorf("%s is a %s, want %s", name, occ.Role, w)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("no occurrence of %s", name)
	}
	for i := range tab.NumBindings() {
		b := tab.Binding(int32(i))
		switch b.Name {
		case "c":
			if b.Kind != BindImport || b.Module != "a.b" || !b.Alias {
				t.Errorf("c: %+v", b)
			}
		case "o":
			if b.Kind != BindImportFrom || b.Module != "m" || b.Level != 1 || b.Attr != "n" {
				t.Errorf("o: %+v", b)
			}
		}
	}
}

func TestMethodsAndInstanceAttributes(t *testing.T) {
	t.Parallel()
	src := `class C:
    def m(self):
        self.a = 1
        self.b = 2
    def __init__(this):
        this.b = 3
        def inner(self):
            self.c = 4
    @classmethod
    def make(cls):
        return cls()
    @staticmethod
    def util(x):
        x.d = 5
    def __new__(cls):
        pass
`
	tab := build(t, src)
	tr := tab.Tree()
	cs := int32(-1)
	for i := range tab.NumScopes() {
		sc := tab.Scope(int32(i))
		switch sc.Name {
		case "C":
			cs = int32(i)
		case "m", "__init__":
			if sc.Method != InstanceMethod || sc.Self < 0 {
				t.Errorf("%s: %v, self %d", sc.Name, sc.Method, sc.Self)
			}
		case "make", "__new__":
			if sc.Method != ClassMethod || sc.Self < 0 {
				t.Errorf("%s: %v", sc.Name, sc.Method)
			}
		case "util":
			if sc.Method != StaticMethod || sc.Self >= 0 {
				t.Errorf("util: %v, self %d", sc.Method, sc.Self)
			}
		case "inner":
			if sc.Method != NotMethod {
				t.Errorf("inner: %v", sc.Method)
			}
		}
	}
	lines := syntax.NewLines([]byte(src))
	for name, want := range map[string]string{"a": "2:13", "b": "5:13", "c": "", "d": ""} {
		a := tab.InstanceAttr(cs, name)
		got := ""
		if a >= 0 {
			got = lines.Pos(tr.Start(a)).String()
		}
		if got != want {
			t.Errorf("self.%s assigned at %q, want %q", name, got, want)
		}
	}
	if tab.ClassScope(0, 6) != cs {
		t.Errorf("ClassScope(0, 6) = %d, want %d", tab.ClassScope(0, 6), cs)
	}
}

func TestTypeChecking(t *testing.T) {
	t.Parallel()
	src := "if TYPE_CHECKING:\n    a = 1\nelse:\n    b = 1\nif not typing.TYPE_CHECKING:\n    c = 1\nelse:\n    d = 1\ndef f():\n    e = 1\n"
	tab := build(t, src)
	want := map[string]bool{"a": true, "b": false, "c": false, "d": true, "e": false, "f": false}
	for i := range tab.NumBindings() {
		b := tab.Binding(int32(i))
		if w, ok := want[b.Name]; ok && b.TypeChecking != w {
			t.Errorf("%s: TypeChecking %v, want %v", b.Name, b.TypeChecking, w)
		}
	}
}

// TestBuildLinear: building a table costs steps in proportion to the
// tree, whatever its shape.
func TestBuildLinear(t *testing.T) {
	t.Parallel()
	shapes := map[string]func(n int) string{
		"one long function": func(n int) string {
			var b strings.Builder
			b.WriteString("def f(x):\n")
			for range n {
				b.WriteString("    x = x + 1\n")
			}
			return b.String()
		},
		"deep nesting": func(n int) string {
			var b strings.Builder
			for i := range n / 8 {
				b.WriteString(strings.Repeat("    ", i%40))
				b.WriteString("def f(x):\n")
			}
			b.WriteString(strings.Repeat("    ", (n/8)%40) + "return x\n")
			return b.String()
		},
		"many globals": func(n int) string {
			var b strings.Builder
			for range n {
				b.WriteString("def f():\n    global g\n    g = 1\n")
			}
			return b.String()
		},
	}
	for name, gen := range shapes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var per [2]float64
			for i, n := range []int{2000, 8000} {
				tab := build(t, gen(n))
				per[i] = float64(tab.Work()) / float64(tab.Tree().Len())
			}
			if per[1] > 1.5*per[0]+1 {
				t.Fatalf("steps per node grow with the size: %.2f, then %.2f", per[0], per[1])
			}
		})
	}
}
