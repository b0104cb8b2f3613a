package pyindex

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// TestDefinitionThroughDeclaredTypes: a member of a value whose type is
// declared (annotations of parameters, variables and returns, strings,
// Optional, unions, typed containers through for, enumerate, items(),
// subscripts and walrus, self attributes declared or assigned from typed
// values, the stub of a compiled base class) lands where pyright lands;
// a union gives every class's member; a value a call hands back as it is
// (def f(obj: T) -> T) is its argument. Forward references and cycles
// answer or decline, bounded.
func TestDefinitionThroughDeclaredTypes(t *testing.T) {
	t.Parallel()
	ix, err := Open("testdata/declared", "")
	if err != nil {
		t.Fatal(err)
	}
	const (
		stub   = "dt/_C/__init__.pyi"
		models = "dt/models.py"
	)
	tests := []struct {
		file, name string
		n          int
		want       string // "file:line" of each answer (0-based), "|" between candidates; "" to decline
	}{
		{"dt/use.py", "size", 0, stub + ":4"},                            // input: Tensor, the stub's base
		{"dt/use.py", "meta", 0, models + ":6"},                          // gm: "GraphModule"
		{"dt/use.py", "recompile", 0, models + ":12"},                    // Optional[GraphModule]
		{"dt/use.py", "recompile", 1, models + ":12|" + models + ":34"},  // Union[GraphModule, Other]
		{"dt/use.py", "graph", 0, models + ":10"},                        // GraphModule | None; self.graph: "Graph"
		{"dt/use.py", "recompile", 2, models + ":12"},                    // make() -> GraphModule
		{"dt/use.py", "meta", 1, models + ":6"},                          // maybe() -> Optional[GraphModule]
		{"dt/use.py", "graph", 1, models + ":10"},                        // through a return annotation
		{"dt/use.py", "owner", 0, models + ":21"},                        // a property's def
		{"dt/use.py", "meta", 2, models + ":6"},                          // what the property returns
		{"dt/use.py", "code", 0, models + ":9"},                          // x: GraphModule = make()
		{"dt/use.py", "meta", 3, models + ":6"},                          // y: GraphModule declared, assigned elsewhere
		{"dt/use.py", "_group", 0, models + ":27"},                       // for s in states: List[State]
		{"dt/use.py", "meta", 4, models + ":6"},                          // self._group = gm, gm: GraphModule
		{"dt/use.py", "ts", 0, models + ":28"},                           // enumerate(states)
		{"dt/use.py", "requires_grad", 0, stub + ":3"},                   // s2.ts[0], ts: List[Tensor]
		{"dt/use.py", "requires_grad", 1, stub + ":3"},                   // Tuple[Tensor, ...][0]
		{"dt/use.py", "_group", 1, models + ":27"},                       // walrus over a subscript
		{"dt/use.py", "recompile", 3, models + ":12"},                    // for k, v in d.items()
		{"dt/use.py", "recompile", 4, models + ":12"},                    // d["a"], Dict[str, GraphModule]
		{"dt/use.py", "owner", 1, models + ":21"},                        // pair[0], Tuple[Graph, GraphModule]
		{"dt/use.py", "code", 1, models + ":9"},                          // pair[1]
		{"dt/use.py", "clone", 0, stub + ":5"},                           // a comprehension over a typed tuple
		{"dt/use.py", "extra", 0, "dt/_tensor.py:4"},                     // out = outputs[1].clone() -> Tensor
		{"dt/more.py", "meta", 0, models + ":6"},                         // a return inferred: GraphModule("")
		{"dt/more.py", "owner", 0, models + ":21"},                       // a property with a setter: its getter's return
		{"dt/more.py", "code", 0, models + ":9"},                         // a, b = f() -> Tuple[Tensor, GraphModule]
		{"dt/more.py", "requires_grad", 1, stub + ":3"},                  // self.x = ... sets the compiled base's declared x
		{"dt/more.py", "extra", 0, "dt/_tensor.py:4"},                    // h * h: __mul__ -> Tensor
		{"dt/more.py", "extra", 1, "dt/_tensor.py:4"},                    // h != h: __ne__ -> Tensor
		{"dt/more.py", "code", 1, models + ":9"},                         // h[0]: __getitem__ -> GraphModule
		{"dt/more.py", "clone", 0, stub + ":5"},                          // *ts: Tensor
		{"dt/more.py", "meta", 1, models + ":6"},                         // **named: GraphModule
		{"dt/more.py", "size", 0, stub + ":4"},                           // for k, v in Iterator[Tuple[str, Tensor]]
		{"dt/more.py", "size", 1, stub + ":4"},                           // next(...)[1]
		{"dt/more.py", "code", 2, models + ":9"},                         // x or GraphModule("")
		{"dt/more.py", "weight", 1, "dt/more.py:9"},                      // a namedtuple's field
		{"dt/more.py", "code", 3, models + ":9"},                         // Pair = Tuple[Graph, GraphModule]; pair[1]
		{"dt/more.py", "code", 4, models + ":9"},                         // if isinstance(x, GraphModule):
		{"dt/more.py", "owner", 1, models + ":21"},                       // if not isinstance(y, Graph): raise
		{"dt/more.py", "recompile", 0, models + ":34"},                   // isinstance(x, Other) and x.recompile
		{"dt/more.py", "recompile", 1, models + ":12|" + models + ":34"}, // for g in [GraphModule(""), Other()]
		{"dt/more.py", "recompile", 2, models + ":12"},                   // super(Sub, self)
		{"dt/more.py", "code", 5, models + ":9"},                         // elif after if not isinstance(z, GraphModule)
		{"dt/more.py", "meta", 2, models + ":6"},                         // self.holder = v typed by the base's holder: GraphModule
		{"dt/passthrough.py", "detach", 0, stub + ":8"},                  // detach = _add_docstr(_TensorBase.detach, …), (obj: T) -> T
		{"dt/passthrough.py", "extra", 0, "dt/_tensor.py:4"},             // p.detach() -> Tensor, from the stub
		{"dt/passthrough.py", "shout", 0, "dt/_tensor.py:7"},             // _keep_doc(obj: Any) -> Any hands back no type: the binding
		{"dt/cyc.py", "back", 0, "dt/cyc.py:14"},                         // a.b.a.b: forward references both ways
		{"dt/cyc.py", "b", 3, "dt/cyc.py:5"},                             // a.go().go()
		{"dt/cyc.py", "x", 0, ""},                                        // Loop = Loop
		{"dt/cyc.py", "q", 0, ""},                                        // Z = Optional["Z"]
		{"dt/cyc.py", "attr", 0, ""},                                     // x = x[0]
	}
	for _, tt := range tests {
		d, err := definitionOf(t, ix, tt.file, tt.name, tt.n)
		got := ""
		if err == nil {
			places := []string{d.Symbol.File + ":" + strconv.Itoa(d.Symbol.Line)}
			for _, a := range d.Also {
				places = append(places, a.Symbol.File+":"+strconv.Itoa(a.Symbol.Line))
			}
			got = strings.Join(places, "|")
		} else if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s %s #%d: %v, want an answer or ErrNotFound", tt.file, tt.name, tt.n, err)
		}
		if got != tt.want {
			t.Errorf("%s %s #%d: %q (%v), want %q", tt.file, tt.name, tt.n, got, err, tt.want)
		}
	}
}

// TestDeclaredTypesInUserFile: a user's buffer (no module name, outside
// the site) resolves annotated parameters into the index as a mirrored
// file does: def f(x: torch.Tensor): x.size.
func TestDeclaredTypesInUserFile(t *testing.T) {
	t.Parallel()
	ix, err := Open("testdata/declared", "")
	if err != nil {
		t.Fatal(err)
	}
	text := "import dt\nfrom dt.models import GraphModule, Other\n\n\ndef f(x: dt.Tensor, u: \"GraphModule | Other\"):\n    x.size()\n    u.recompile()\n"
	tree, err := syntax.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Path: filepath.Join(t.TempDir(), "train.py"), Table: pyscope.New(tree)}
	tests := []struct {
		needle string
		want   string
	}{
		{"size", "dt/_C/__init__.pyi:4"},
		{"recompile", "dt/models.py:12|dt/models.py:34"},
	}
	for _, tt := range tests {
		d, err := ix.DefinitionAt(src, strings.Index(text, tt.needle))
		if err != nil {
			t.Errorf("%s: %v", tt.needle, err)
			continue
		}
		places := []string{d.Symbol.File + ":" + strconv.Itoa(d.Symbol.Line)}
		for _, a := range d.Also {
			places = append(places, a.Symbol.File+":"+strconv.Itoa(a.Symbol.Line))
		}
		if got := strings.Join(places, "|"); got != tt.want || d.InSource {
			t.Errorf("%s: %s (in source %v), want %s", tt.needle, got, d.InSource, tt.want)
		}
	}
}

// TestDeclaredTypesBounded: shapes that make declared types go round or
// grow (returns that call each other in a ring, aliases in a ring, a
// union of hundreds of classes, containers nested a hundred deep, a long
// function read at its end) answer or decline within the navigation's
// bound on lookups; a union gives at most maxCandidates classes.
func TestDeclaredTypesBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	const n = 200
	for i := range n {
		fmt.Fprintf(&b, "class C%d:\n    def m(self):\n        pass\n\n\n", i)
	}
	for i := range n {
		fmt.Fprintf(&b, "def f%d():\n    return f%d()\n\n\n", i, (i+1)%n)
		fmt.Fprintf(&b, "A%d = Optional[\"A%d\"]\n", i, (i+1)%n)
	}
	union := make([]string, n)
	for i := range union {
		union[i] = fmt.Sprintf("C%d", i)
	}
	fmt.Fprintf(&b, "U = Union[%s]\n", strings.Join(union, ", "))
	fmt.Fprintf(&b, "N = %sC0%s\n", strings.Repeat("List[", 100), strings.Repeat("]", 100))
	b.WriteString("\n\ndef use(a: A0, u: U, nest: N, big: C0):\n")
	b.WriteString("    f0().m\n    a.m\n    u.m\n    nest[0][0][0].m\n")
	b.WriteString("    if isinstance(big, C1):\n        pass\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "    v%d = big\n", i)
	}
	b.WriteString("    big.m\n")
	site := writeSite(t, map[string]string{
		"ring/__init__.py": "",
		"ring/shapes.py":   "from typing import List, Optional, Union\n\n" + b.String(),
	})
	ix, err := Open(site, "")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := navSource(t, ix, "ring/shapes.py")
	text := string(src.Table.Tree().Src())
	tests := []struct {
		needle string
		want   int // answers (the definition and its Also); 0 to decline
	}{
		{"    f0().m", 0},
		{"    a.m", 0},
		{"    u.m", maxCandidates},
		{"    nest[0][0][0].m", 0},
		{"    big.m", 1},
	}
	for _, tt := range tests {
		off := strings.LastIndex(text, tt.needle) + len(tt.needle) - 1
		occ, ok := src.Table.OccurrenceAt(off)
		if !ok {
			t.Fatalf("%s: no name", tt.needle)
		}
		nav := ix.navigator(src)
		e, err := nav.definition(occ)
		if nav.r.steps > maxNavSteps+1 {
			t.Errorf("%s: %d lookups, want at most %d", tt.needle, nav.r.steps, maxNavSteps)
		}
		got := 0
		if err == nil {
			got = 1 + len(e.alts)
		} else if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want an answer or ErrNotFound", tt.needle, err)
		}
		if got != tt.want {
			t.Errorf("%s: %d answers (%v), want %d", tt.needle, got, err, tt.want)
		}
	}
}

// TestPassThroughParts: the pieces passThrough reads from an assignment's
// value and a signature, each as the index stores them (a value may be
// cut after its first argument).
func TestPassThroughParts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		value, callee, arg string
		ok                 bool
	}{
		{`_C._add_docstr(_C._TensorBase.detach, r"""…`, "_C._add_docstr", "_C._TensorBase.detach", true},
		{"wrap(f)", "wrap", "f", true},
		{"wrap( a.b )", "wrap", "a.b", true},
		{"wrap(None, doc)", "", "", false},
		{"wrap(f(x), doc)", "", "", false},
		{"wrap()", "", "", false},
		{"a.b", "", "", false},
		{"(lambda x: x)(f)", "", "", false},
		{"wrap(f", "", "", false}, // cut inside the argument
	} {
		callee, arg, ok := passThroughCall(tt.value)
		if callee != tt.callee || arg != tt.arg || ok != tt.ok {
			t.Errorf("passThroughCall(%q) = %q, %q, %v; want %q, %q, %v", tt.value, callee, arg, ok, tt.callee, tt.arg, tt.ok)
		}
	}
	for sig, want := range map[string]string{
		"(obj: T, doc_obj: str) -> T":     "T",
		"(obj: T = None) -> T":            "T",
		"(obj: Dict[str, T], x) -> T":     "Dict[str, T]",
		"(obj) -> T":                      "",
		"(self: Callable[[int], T]) -> T": "Callable[[int], T]",
		"() -> T":                         "",
	} {
		if got := firstParamAnn(sig); got != want {
			t.Errorf("firstParamAnn(%q) = %q, want %q", sig, got, want)
		}
	}
}
