package pyscope

import "github.com/torchlsp/torchlsp/server/syntax"

// OutlineItem is a name a file defines, for an editor's outline: a def, a
// class, or a variable a module or class body assigns, with what it
// holds (a class's methods and attributes, a function's nested defs and
// classes).
type OutlineItem struct {
	Name string
	Kind BindKind // BindDef, BindClass or BindAssign
	// Span is the whole statement (decorators included), NameSpan the
	// name.
	Span, NameSpan syntax.Span
	Children       []OutlineItem
}

// Outline lists the file's definitions in source order, nested as they
// are: every def and class, and the first assignment of each variable of
// the module and of each class body (a function's locals are left out).
// Names bound under global or nonlocal are where they are written, not
// listed again.
func (t *Table) Outline() []OutlineItem {
	tr := t.tree
	byNode := map[int32]int32{} // def or class node → its scope
	for i := range t.scopes {
		if k := t.scopes[i].Kind; k == ScopeFunction || k == ScopeClass {
			byNode[t.scopes[i].Node] = int32(i)
		}
	}
	perScope := make([][]int32, len(t.scopes))
	seen := map[int32]map[string]bool{}
	for i := range t.binds {
		bd := &t.binds[i]
		if bd.Declared {
			continue
		}
		switch bd.Kind {
		case BindDef, BindClass:
		case BindAssign:
			if k := t.scopes[bd.Scope].Kind; k != ScopeModule && k != ScopeClass {
				continue
			}
			if seen[bd.Scope] == nil {
				seen[bd.Scope] = map[string]bool{}
			}
			if seen[bd.Scope][bd.Name] {
				continue
			}
			seen[bd.Scope][bd.Name] = true
		default:
			continue
		}
		perScope[bd.Scope] = append(perScope[bd.Scope], int32(i))
	}
	var items func(s int32) []OutlineItem
	items = func(s int32) []OutlineItem {
		var out []OutlineItem
		for _, bi := range perScope[s] {
			bd := &t.binds[bi]
			stmt := bd.Stmt
			if p := tr.Parent(stmt); (bd.Kind == BindDef || bd.Kind == BindClass) && p >= 0 && tr.Kind(p) == syntax.KindDecoratedDefinition {
				stmt = p
			}
			it := OutlineItem{Name: bd.Name, Kind: bd.Kind, Span: tr.Span(stmt), NameSpan: tr.Span(bd.Node)}
			if cs, ok := byNode[bd.Stmt]; ok && bd.Kind != BindAssign {
				it.Children = items(cs)
			}
			out = append(out, it)
		}
		return out
	}
	return items(0)
}
