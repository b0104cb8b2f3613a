package pyindex

import (
	"strings"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// sourceSymbol describes identifier node of the navigated source: a def, a
// class, a parameter, an import or a variable, with what hover shows of
// it, read from the source's own tree (the buffer's text, which may differ
// from the file the index read).
func (n *navigator) sourceSymbol(node, bind int32) Symbol {
	tr := n.tree
	pos := tr.StartPos(node)
	sym := Symbol{
		Kind: KindVariable, Name: tr.Text(node), Module: n.src.Module,
		File: n.src.Rel, Path: n.src.Path, IsStub: n.sourceIsStub(),
		Line: pos.Line, Col: pos.Col, EndLine: pos.Line,
	}
	sym.Qualname = n.qualname(node, bind)
	e := &extractor{t: tr, src: tr.Src(), pkg: n.pkg, fd: &fileData{}, limit: 1}
	var b binding
	p := tr.Parent(node)
	switch k := tr.Kind(p); {
	case k == syntax.KindFunctionDefinition && tr.Field(node) == syntax.FieldName:
		b = e.function(p, decoratorsOf(e, p), false)
	case k == syntax.KindClassDefinition && tr.Field(node) == syntax.FieldName:
		b = e.class(p, decoratorsOf(e, p), false)
		b.members = nil
	case isParameter(tr, node):
		sym.Kind = KindParameter
		param := node
		for q := tr.Parent(param); q >= 0 && tr.Kind(q) != syntax.KindParameters && tr.Kind(q) != syntax.KindLambdaParameters; q = tr.Parent(q) {
			param = q
		}
		sym.Signature = oneLine(tr.Text(param), true)
		return sym
	case bind >= 0 && (n.tab.Binding(bind).Kind == pyscope.BindImport || n.tab.Binding(bind).Kind == pyscope.BindImportFrom):
		bd := n.tab.Binding(bind)
		sym.Kind, sym.Value = KindImport, n.absolute(bd.Module, bd.Level)
		if bd.Attr != "" {
			sym.Value += "." + bd.Attr
		}
		sym.EndLine = int(tr.Node(bd.Stmt).EndRow)
		return sym
	default:
		if stmt := assignmentOf(tr, node); stmt >= 0 {
			for _, v := range e.assignment(stmt, false, false, nil) {
				if int(v.line) == pos.Line && int(v.col) == pos.Col {
					b = v
				}
			}
		}
		if b.name == "" {
			return sym
		}
	}
	sym.Kind, sym.Signature, sym.Value, sym.DocSummary = b.kind, b.sig, b.value, b.docSummary
	sym.EndLine = int(b.endLine)
	if b.decorators != "" {
		sym.Decorators = strings.Split(b.decorators, "\n")
	}
	if b.docEnd > b.docStart {
		sym.Doc = cleandoc(syntax.LiteralContents(tr.Src()[b.docStart:b.docEnd]))
	}
	return sym
}

func decoratorsOf(e *extractor, def int32) string {
	p := e.t.Parent(def)
	if p < 0 || e.t.Kind(p) != syntax.KindDecoratedDefinition {
		return ""
	}
	var decos []string
	for d := range e.t.Children(p) {
		if e.t.Kind(d) == syntax.KindDecorator {
			decos = append(decos, strings.TrimPrefix(oneLine(e.t.Text(d), true), "@"))
		}
	}
	return strings.Join(decos, "\n")
}

// isParameter reports whether identifier id names a parameter of a def or
// lambda.
func isParameter(tr *syntax.Tree, id int32) bool {
	for q := tr.Parent(id); q >= 0; q = tr.Parent(q) {
		switch tr.Kind(q) {
		case syntax.KindParameters, syntax.KindLambdaParameters:
			return true
		case syntax.KindTypedParameter, syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern:
			if tr.Field(id) == syntax.FieldType {
				return false
			}
		case syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			if tr.Field(id) != syntax.FieldName {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// assignmentOf is the assignment whose target holds id, or -1.
func assignmentOf(tr *syntax.Tree, id int32) int32 {
	for q := tr.Parent(id); q >= 0; q = tr.Parent(q) {
		switch tr.Kind(q) {
		case syntax.KindAssignment:
			return q
		case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindTuple, syntax.KindList,
			syntax.KindParenthesizedExpression, syntax.KindListSplatPattern, syntax.KindExpressionList:
		default:
			return -1
		}
	}
	return -1
}

// qualname names a place of the source as Python's __qualname__ would:
// module, classes and functions around it ("f.<locals>.x").
func (n *navigator) qualname(node, bind int32) string {
	scope := int32(-1)
	if bind >= 0 {
		scope = n.tab.Binding(bind).Scope
	} else if occ, ok := n.tab.OccurrenceOf(node); ok {
		scope = occ.Scope
		if occ.Role == pyscope.RoleAttribute { // self.x: an attribute of the class
			if sc := n.tab.Scope(scope); sc.Parent >= 0 && n.tab.Scope(sc.Parent).Kind == pyscope.ScopeClass {
				scope = sc.Parent
			}
		}
	}
	var parts []string
	for s := scope; s > 0; s = n.tab.Scope(s).Parent {
		sc := n.tab.Scope(s)
		switch sc.Kind {
		case pyscope.ScopeClass:
			parts = append(parts, sc.Name)
		case pyscope.ScopeFunction:
			parts = append(parts, sc.Name+".<locals>")
		case pyscope.ScopeLambda:
			parts = append(parts, "<lambda>.<locals>")
		}
	}
	q := n.src.Module
	for i := len(parts) - 1; i >= 0; i-- {
		q = joinName(q, parts[i])
	}
	return joinName(q, n.tree.Text(node))
}
