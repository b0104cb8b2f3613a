package pyindex

import (
	"fmt"
	"os"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// Param is a parameter of a def, as written in its signature.
type Param struct {
	Name      string
	Line, Col int    // 0-based line, UTF-8 byte column of the name
	Text      string // the parameter as written: "dim: int = -1"
}

// Parameter finds the parameter called name in the def at line (0-based)
// of the file at path: the line of the def's name, or of its first
// decorator, which is where inspect places a decorated function. *args and
// **kwargs are not parameters by name, and positional-only parameters
// (before "/") cannot be passed as keywords. ok is false when the file has
// no such def or the def no such parameter.
func (ix *Index) Parameter(path string, line int, name string) (Param, bool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Param{}, false, fmt.Errorf("pyindex: parameter %s: %w", name, err)
	}
	p, err := ix.parsers.Get()
	if err != nil {
		return Param{}, false, fmt.Errorf("pyindex: parameter %s: %w", name, err)
	}
	defer ix.parsers.Put(p)
	var out Param
	var ok bool
	p.Visit(src, func(t *syntax.Tree) { out, ok = findParameter(t, line, name) })
	return out, ok, nil
}

func findParameter(t *syntax.Tree, line int, name string) (Param, bool) {
	nodes := t.Nodes()
	for i := range nodes {
		n := int32(i)
		if t.Kind(n) != syntax.KindFunctionDefinition {
			continue
		}
		nm := t.Child(n, syntax.FieldName)
		if nm < 0 {
			continue
		}
		start := int(t.Node(n).StartRow)
		if par := t.Parent(n); par >= 0 && t.Kind(par) == syntax.KindDecoratedDefinition {
			start = int(t.Node(par).StartRow)
		}
		if int(t.Node(nm).StartRow) != line && start != line {
			continue
		}
		params := t.Child(n, syntax.FieldParameters)
		if params < 0 {
			return Param{}, false
		}
		return paramNamed(t, params, name)
	}
	return Param{}, false
}

// paramNamed finds name among a parameter list's children.
func paramNamed(t *syntax.Tree, params int32, name string) (Param, bool) {
	var found Param
	ok := false
	for c := range t.Children(params) {
		id := int32(-1)
		switch t.Kind(c) {
		case syntax.KindPositionalSeparator:
			ok = false // what came before "/" is positional-only
			continue
		case syntax.KindIdentifier:
			id = c
		case syntax.KindTypedParameter:
			if f := t.NthChild(c, 0); f >= 0 && t.Kind(f) == syntax.KindIdentifier {
				id = f
			}
		case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			if f := t.Child(c, syntax.FieldName); f >= 0 && t.Kind(f) == syntax.KindIdentifier {
				id = f
			}
		}
		if id >= 0 && t.Text(id) == name {
			nd := t.Node(id)
			found, ok = Param{Name: name, Line: int(nd.StartRow), Col: int(nd.StartCol), Text: oneLine(t.Text(c), true)}, true
		}
	}
	return found, ok
}
