package pyindex

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestDefinitionThroughDeclaredTypes: a member of a value whose type is
// declared (annotations of parameters, variables and returns, strings,
// Optional, unions, typed containers through for, enumerate, items(),
// subscripts and walrus, self attributes declared or assigned from typed
// values, the stub of a compiled base class) lands where pyright lands;
// a union gives every class's member. Forward references and cycles
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
		{"dt/use.py", "size", 0, stub + ":4"},                           // input: Tensor, the stub's base
		{"dt/use.py", "meta", 0, models + ":6"},                         // gm: "GraphModule"
		{"dt/use.py", "recompile", 0, models + ":12"},                   // Optional[GraphModule]
		{"dt/use.py", "recompile", 1, models + ":12|" + models + ":34"}, // Union[GraphModule, Other]
		{"dt/use.py", "graph", 0, models + ":10"},                       // GraphModule | None; self.graph: "Graph"
		{"dt/use.py", "recompile", 2, models + ":12"},                   // make() -> GraphModule
		{"dt/use.py", "meta", 1, models + ":6"},                         // maybe() -> Optional[GraphModule]
		{"dt/use.py", "graph", 1, models + ":10"},                       // through a return annotation
		{"dt/use.py", "owner", 0, models + ":21"},                       // a property's def
		{"dt/use.py", "meta", 2, models + ":6"},                         // what the property returns
		{"dt/use.py", "code", 0, models + ":9"},                         // x: GraphModule = make()
		{"dt/use.py", "meta", 3, models + ":6"},                         // y: GraphModule declared, assigned elsewhere
		{"dt/use.py", "_group", 0, models + ":27"},                      // for s in states: List[State]
		{"dt/use.py", "meta", 4, models + ":6"},                         // self._group = gm, gm: GraphModule
		{"dt/use.py", "ts", 0, models + ":28"},                          // enumerate(states)
		{"dt/use.py", "requires_grad", 0, stub + ":3"},                  // s2.ts[0], ts: List[Tensor]
		{"dt/use.py", "requires_grad", 1, stub + ":3"},                  // Tuple[Tensor, ...][0]
		{"dt/use.py", "_group", 1, models + ":27"},                      // walrus over a subscript
		{"dt/use.py", "recompile", 3, models + ":12"},                   // for k, v in d.items()
		{"dt/use.py", "recompile", 4, models + ":12"},                   // d["a"], Dict[str, GraphModule]
		{"dt/use.py", "owner", 1, models + ":21"},                       // pair[0], Tuple[Graph, GraphModule]
		{"dt/use.py", "code", 1, models + ":9"},                         // pair[1]
		{"dt/use.py", "clone", 0, stub + ":5"},                          // a comprehension over a typed tuple
		{"dt/use.py", "extra", 0, "dt/_tensor.py:4"},                    // out = outputs[1].clone() -> Tensor
		{"dt/cyc.py", "back", 0, "dt/cyc.py:14"},                        // a.b.a.b: forward references both ways
		{"dt/cyc.py", "b", 3, "dt/cyc.py:5"},                            // a.go().go()
		{"dt/cyc.py", "x", 0, ""},                                       // Loop = Loop
		{"dt/cyc.py", "q", 0, ""},                                       // Z = Optional["Z"]
		{"dt/cyc.py", "attr", 0, ""},                                    // x = x[0]
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
