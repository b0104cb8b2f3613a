package pybuf

import (
	"bytes"
	"math/bits"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// maxAliasDepth bounds alias chains (a = b.x; b = a.y) during resolution.
const maxAliasDepth = 16

// maxChain is the longest dotted chain answered for; longer ones are not
// real code, and would make answering quadratic in their length.
const maxChain = 64

// RefAt tells what the identifier at pos names. pos may be on the
// identifier or just after its last byte. ok is false when the position
// names nothing known: the user's own variables, builtins, expressions
// whose value is not known without running the code, comments, strings.
func (b *Buffer) RefAt(pos Pos) (Ref, bool) { return b.refAt(pos, nil) }

func (b *Buffer) refAt(pos Pos, m *meter) (Ref, bool) {
	off, ok := b.lines.Offset(b.src, pos)
	if !ok {
		return Ref{}, false
	}
	if i := b.identAt(off, m); i >= 0 {
		if r, ok := b.refForIdent(i, m); ok {
			return r, true
		}
		if !b.tree.InError(b.idents[i].node) {
			return Ref{}, false
		}
	}
	return b.fallbackAt(off, m)
}

// QualnameOf is RefAt for identifier node n of the buffer's Tree: the
// qualified name the identifier names, when the answer is about n itself
// (its span starts where n does); "" otherwise.
func (b *Buffer) QualnameOf(n int32) string {
	if n < 0 || int(n) >= len(b.nodes) || b.nodes[n].Kind != syntax.KindIdentifier {
		return ""
	}
	i := b.identIndex(n)
	if i < 0 {
		return ""
	}
	r, ok := b.refForIdent(i, nil)
	if !ok && b.tree.InError(n) {
		r, ok = b.fallbackAt(int(b.nodes[n].Start), nil)
	}
	if !ok || r.Span.Start != b.tree.StartPos(n) {
		return ""
	}
	return r.Qualname
}

// meter counts the steps a query takes, for the tests that bound them. A
// nil meter counts nothing.
type meter struct{ steps int }

func (m *meter) add(k int) {
	if m != nil {
		m.steps += k
	}
}

// Refs returns every identifier of the buffer that resolves, in source
// order. Positions tree-sitter could not parse are left out.
func (b *Buffer) Refs() []Ref {
	var out []Ref
	for i := range b.idents {
		if r, ok := b.refForIdent(i, nil); ok {
			out = append(out, r)
		}
	}
	return out
}

// Imports returns the names bound by import statements, in source order.
func (b *Buffer) Imports() []Import {
	return append([]Import(nil), b.imps...)
}

// identAt returns the index of the identifier containing off, or ending
// at off when none contains it; -1 when there is neither.
func (b *Buffer) identAt(off int, m *meter) int {
	m.add(bits.Len(uint(len(b.idents))))
	o := uint32(off)
	i := sort.Search(len(b.idents), func(i int) bool {
		return b.nodes[b.idents[i].node].Start > o
	}) - 1
	if i < 0 {
		return -1
	}
	n := &b.nodes[b.idents[i].node]
	if n.Start < n.End && o <= n.End {
		return i
	}
	return -1
}

// identIndex returns the index in b.idents of identifier node n, or -1.
func (b *Buffer) identIndex(n int32) int {
	start := b.nodes[n].Start
	i := sort.Search(len(b.idents), func(i int) bool {
		return b.nodes[b.idents[i].node].Start >= start
	})
	for ; i < len(b.idents) && b.nodes[b.idents[i].node].Start == start; i++ {
		if b.idents[i].node == n {
			return i
		}
	}
	return -1
}

func (b *Buffer) refForIdent(i int, m *meter) (Ref, bool) {
	id := b.idents[i]
	n := id.node
	nd := b.nodes[n]
	if nd.Start == nd.End {
		return Ref{}, false
	}
	r := Ref{Span: b.tree.Span(n)}
	p := nd.Parent
	if p < 0 {
		return Ref{}, false
	}
	switch pk := b.nodes[p].Kind; {
	case pk == syntax.KindDottedName || (pk == syntax.KindAliasedImport && nd.Field == syntax.FieldAlias):
		r.Qualname, r.Module = b.importQual(n, p, m)
		r.Kind = KindImport
		return r, r.Qualname != ""
	case pk == syntax.KindKeywordArgument && nd.Field == syntax.FieldName:
		call := b.callOfArgument(p)
		if call < 0 {
			return Ref{}, false
		}
		r.Qualname = b.resolveChain(b.tree.Child(call, syntax.FieldFunction), id.scope, 0, m)
		r.Kind, r.Keyword = KindKeyword, b.tree.Text(n)
		return r, r.Qualname != ""
	case pk == syntax.KindAttribute && nd.Field == syntax.FieldAttribute:
		return b.attributeRef(r, id, p, m)
	}
	if id.bind >= 0 {
		r.Qualname = b.evalBinding(id.bind, 0, m)
		r.Write = b.binds[id.bind].write
	} else {
		r.Qualname = b.resolveName(b.tree.Text(n), id.scope, int(nd.Start), 0, m)
	}
	r.Kind = KindName
	if b.isCallee(n) {
		r.Kind = KindCall
	}
	return r, r.Qualname != ""
}

// attributeRef answers for the identifier of attribute node a.
func (b *Buffer) attributeRef(r Ref, id ident, a int32, m *meter) (Ref, bool) {
	segs := []int32{id.node} // right to left
	root := int32(-1)
	for cur := a; root < 0; {
		m.add(1)
		obj := b.tree.Child(cur, syntax.FieldObject)
		if obj < 0 {
			return Ref{}, false
		}
		last := segs[len(segs)-1]
		if b.brokenChain(obj, last) {
			root, segs = last, segs[:len(segs)-1]
			break
		}
		switch b.nodes[obj].Kind {
		case syntax.KindIdentifier:
			root = obj
		case syntax.KindAttribute:
			attr := b.tree.Child(obj, syntax.FieldAttribute)
			if attr < 0 || len(segs) > maxChain {
				return Ref{}, false
			}
			segs = append(segs, attr)
			cur = obj
		default: // a call result, a subscript, a literal...
			return Ref{}, false
		}
	}
	if b.nodes[root].Start == b.nodes[root].End {
		return Ref{}, false
	}
	qual := b.resolveName(b.tree.Text(root), id.scope, int(b.nodes[root].Start), 0, m)
	if qual == "" {
		return Ref{}, false
	}
	var sb strings.Builder
	sb.WriteString(qual)
	for i := len(segs) - 1; i >= 0; i-- {
		sb.WriteByte('.')
		sb.Write(b.tree.Bytes(segs[i]))
	}
	r.Qualname = sb.String()
	switch {
	case len(segs) == 0:
		r.Kind = KindName
	case b.isCallee(a):
		r.Kind = KindCall
	default:
		r.Kind = KindAttribute
	}
	r.Write = len(segs) > 0 && b.writes.has(a)
	return r, true
}

// brokenChain reports whether "obj.\nattr" has a line break after the
// dot: in a half-typed buffer that is "obj." at the end of one line and an
// unrelated name on the next, which tree-sitter joins into one attribute.
func (b *Buffer) brokenChain(obj, attr int32) bool {
	gap := b.src[b.nodes[obj].End:b.nodes[attr].Start]
	dot := bytes.IndexByte(gap, '.')
	return dot >= 0 && bytes.IndexByte(gap[dot:], '\n') >= 0
}

func (b *Buffer) isCallee(n int32) bool {
	p := b.nodes[n].Parent
	return p >= 0 && b.nodes[p].Kind == syntax.KindCall && b.nodes[n].Field == syntax.FieldFunction
}

// callOfArgument returns the call a keyword argument belongs to, or -1.
func (b *Buffer) callOfArgument(kw int32) int32 {
	al := b.nodes[kw].Parent
	if al < 0 || b.nodes[al].Kind != syntax.KindArgumentList {
		return -1
	}
	call := b.nodes[al].Parent
	if call < 0 || b.nodes[call].Kind != syntax.KindCall {
		return -1
	}
	return call
}

// importQual answers for identifier n of an import statement; p is its
// parent, a dotted_name or an aliased_import.
func (b *Buffer) importQual(n, p int32, m *meter) (string, bool) {
	stmt := p
	// The statement is at most three levels up (dotted_name, aliased_import
	// or relative_import, statement); anything further is no import.
	for hops := 0; stmt >= 0; hops++ {
		m.add(1)
		if hops > 3 {
			return "", false
		}
		k := b.nodes[stmt].Kind
		if k == syntax.KindImportStatement || k == syntax.KindImportFromStatement {
			break
		}
		if k == syntax.KindFutureImportStatement || k == syntax.KindRelativeImport || k == syntax.KindError {
			return "", false
		}
		stmt = b.nodes[stmt].Parent
	}
	if stmt < 0 {
		return "", false
	}
	var name string // the dotted name n is in, up to n
	switch {
	case b.nodes[p].Kind == syntax.KindAliasedImport: // the alias: the whole name
		d := b.tree.Child(p, syntax.FieldName)
		if d < 0 {
			return "", false
		}
		name = b.dotted(d, -1)
	default:
		name = b.dotted(p, n)
		if b.nodes[p].Field == syntax.FieldModuleName { // from NAME import ...
			return name, true
		}
	}
	if b.nodes[stmt].Kind == syntax.KindImportStatement {
		return name, true
	}
	module, relative := b.fromModule(stmt)
	if relative || module == "" {
		return "", false
	}
	return module + "." + name, false
}

// resolveChain resolves a name or dotted chain of names evaluated in
// scope s; "" when it names nothing known.
func (b *Buffer) resolveChain(n int32, s int32, depth int, m *meter) string {
	if n < 0 || !b.isChain(n) {
		return ""
	}
	m.add(1)
	var segs []int32
	for b.nodes[n].Kind == syntax.KindAttribute {
		m.add(1)
		attr, obj := b.tree.Child(n, syntax.FieldAttribute), b.tree.Child(n, syntax.FieldObject)
		if b.brokenChain(obj, attr) || len(segs) > maxChain {
			return ""
		}
		segs = append(segs, attr)
		n = obj
	}
	qual := b.resolveName(b.tree.Text(n), s, int(b.nodes[n].Start), depth, m)
	if qual == "" {
		return ""
	}
	var sb strings.Builder
	sb.WriteString(qual)
	for i := len(segs) - 1; i >= 0; i-- {
		sb.WriteByte('.')
		sb.Write(b.tree.Bytes(segs[i]))
	}
	return sb.String()
}

func (b *Buffer) resolveName(name string, s int32, off int, depth int, m *meter) string {
	if depth > maxAliasDepth {
		return ""
	}
	bi := b.lookup(name, s, off, m)
	if bi < 0 {
		return ""
	}
	return b.evalBinding(bi, depth, m)
}

func (b *Buffer) evalBinding(bi int32, depth int, m *meter) string {
	bd := &b.binds[bi]
	switch bd.Kind {
	case bindImport:
		return bd.qual
	case bindAlias:
		return b.resolveChain(bd.rhs, bd.rhsScope, depth+1, m)
	}
	return ""
}

// lookup finds the binding name refers to at offset off in scope s, or -1.
//
// In the scope of the reference and in enclosing scopes that run at once
// (class bodies, comprehensions), the last binding before off wins. A
// function body runs later, when every module-level statement has run,
// so from inside one an enclosing binding after off counts too.
func (b *Buffer) lookup(name string, s int32, off int, m *meter) int32 {
	immediate := true    // no function or lambda boundary crossed yet
	crossedFunc := false // class scopes are invisible from nested functions
	for s >= 0 {
		m.add(1)
		sc := &b.scopes[s]
		if crossedFunc && sc.Kind == ScopeClass {
			s = sc.Parent
			continue
		}
		if sc.globals[name] {
			s, immediate = 0, false
			continue
		}
		if binds := sc.names[name]; len(binds) > 0 && !sc.nonlocals[name] {
			// binds is sorted by visibility offset: take the last one
			// visible at off.
			m.add(bits.Len(uint(len(binds))))
			i := sort.Search(len(binds), func(i int) bool { return b.binds[binds[i]].at > off }) - 1
			switch {
			case i >= 0:
				return b.preferTryBody(binds, i, m)
			case !immediate:
				return binds[0]
			case sc.Kind != ScopeClass:
				return -1 // a local used before it is bound
			}
		}
		switch sc.Kind {
		case ScopeFunction, ScopeLambda:
			immediate, crossedFunc = false, true
		case ScopeComprehension:
			crossedFunc = true
		}
		s = sc.Parent
	}
	return -1
}

// preferTryBody turns binding binds[i], when made in an except clause,
// into the one the try body made for the same name: "try: import x as y /
// except ImportError: y = None" names x where y is used. binds is sorted
// by visibility offset; the try body's binding comes shortly before.
func (b *Buffer) preferTryBody(binds []int32, i int, m *meter) int32 {
	try := b.binds[binds[i]].handlerOf
	if try < 0 {
		return binds[i]
	}
	for j := i - 1; j >= 0 && j >= i-maxChain; j-- {
		m.add(1)
		if a := &b.binds[binds[j]]; a.tryBody == try && a.Kind != bindOther {
			return binds[j]
		}
	}
	return binds[i]
}

// scopeAt returns the innermost scope containing off (the one starting
// last). A scope's end counts as inside, for the cursor after the last name
// of a function. Scopes nest or are apart, so the answer is the last scope
// starting at or before off, or the first of its enclosing ones that still
// holds off.
func (b *Buffer) scopeAt(off int, m *meter) int32 {
	m.add(bits.Len(uint(len(b.scopeOrder))))
	k := int32(sort.Search(len(b.scopeOrder), func(k int) bool { return b.scopes[b.scopeOrder[k]].Start > off })) - 1
	for ; k >= 0; k = b.scopeUp[k] {
		m.add(1)
		if sc := &b.scopes[b.scopeOrder[k]]; off <= sc.End {
			return b.scopeOrder[k]
		}
	}
	return 0
}

// AssignedValue returns the expression identifier node n reads when the
// name it reads is bound exactly once in the scope that binds it, by an
// assignment of that name alone (x = v, x = y = v, or x, y = v, w): v's
// node. It returns -1 for anything else: a name assigned twice, a
// parameter, a loop or with target, an import, a global that is not
// assigned, or n being the assignment's own target.
func (b *Buffer) AssignedValue(n int32) int32 {
	if n < 0 || int(n) >= len(b.nodes) || b.nodes[n].Kind != syntax.KindIdentifier {
		return -1
	}
	i := b.identIndex(n)
	if i < 0 || b.idents[i].bind >= 0 {
		return -1
	}
	name := b.tree.Text(n)
	bi := b.lookup(name, b.idents[i].scope, int(b.nodes[n].Start), nil)
	if bi < 0 {
		return -1
	}
	bd := &b.binds[bi]
	if len(b.scopes[bd.scope].names[name]) != 1 {
		return -1
	}
	return bd.value
}
