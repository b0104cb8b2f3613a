package diagnose

import (
	"github.com/torchlsp/torchlsp/server/syntax"
)

// tree is the syntax tree of the buffer being checked (the pybuf.Buffer's
// own, never a second parse) with the per-node facts the checks ask for
// again and again, computed in one pass so that asking costs nothing.
type tree struct {
	*syntax.Tree
	src   []byte
	lines syntax.Lines
	fnOf  []int32 // innermost enclosing function_definition of each node, or -1
	clsOf []int32 // innermost enclosing class_definition of each node, or -1
	stmt  []int32 // the statement holding each node: itself or the ancestor whose parent is a block or the module
	// loop is the innermost for or while statement, or comprehension,
	// whose body holds each node in the node's own function, or -1; the
	// iterable of a loop is not in its body.
	loop []int32
}

func newTree(t *syntax.Tree, lines syntax.Lines) *tree {
	n := t.Len()
	tr := &tree{Tree: t, src: t.Src(), lines: lines,
		fnOf: make([]int32, n), clsOf: make([]int32, n), stmt: make([]int32, n), loop: make([]int32, n)}
	nodes := t.Nodes()
	for i := range nodes {
		p := nodes[i].Parent
		if p < 0 {
			tr.fnOf[i], tr.clsOf[i], tr.stmt[i], tr.loop[i] = -1, -1, int32(i), -1
			continue
		}
		// Parents come before their children in the tree.
		tr.fnOf[i], tr.clsOf[i], tr.loop[i] = tr.fnOf[p], tr.clsOf[p], tr.loop[p]
		switch nodes[p].Kind {
		case syntax.KindFunctionDefinition:
			tr.fnOf[i], tr.loop[i] = p, -1
		case syntax.KindClassDefinition:
			tr.clsOf[i], tr.loop[i] = p, -1
		case syntax.KindLambda:
			tr.loop[i] = -1
		case syntax.KindForStatement, syntax.KindWhileStatement, syntax.KindListComprehension,
			syntax.KindGeneratorExpression, syntax.KindSetComprehension, syntax.KindDictionaryComprehension:
			if f := nodes[i].Field; f == syntax.FieldBody || nodes[i].Kind == syntax.KindBlock {
				tr.loop[i] = p
			}
		}
		if k := nodes[p].Kind; k == syntax.KindBlock || k == syntax.KindModule {
			tr.stmt[i] = int32(i)
		} else {
			tr.stmt[i] = tr.stmt[p]
		}
	}
	return tr
}

// line returns line i without its ending, or "" past the end.
func (t *tree) line(i int) string { return t.lines.Line(t.src, i) }

// literalKind classifies a literal expression: bool, int, float, str, none;
// "" for anything else.
func (t *tree) literalKind(n int32) string {
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case syntax.KindTrue, syntax.KindFalse:
		return "bool"
	case syntax.KindInteger:
		return "int"
	case syntax.KindFloat:
		return "float"
	case syntax.KindNone:
		return "none"
	case syntax.KindString, syntax.KindConcatenatedString:
		if _, ok := t.PlainString(n); ok {
			return "str"
		}
	case syntax.KindUnaryOperator:
		if a := t.Child(n, syntax.FieldArgument); a >= 0 {
			if k := t.literalKind(a); k == "int" || k == "float" {
				return k
			}
		}
	}
	return ""
}
