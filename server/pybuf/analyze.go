package pybuf

import (
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// scope is a block that binds names.
type scope struct {
	Kind       ScopeKind
	name       string
	Start, End int
	Parent     int32
	names      map[string][]int32 // name -> bindings, in source order
	globals    map[string]bool    // names declared global here
	nonlocals  map[string]bool    // names declared nonlocal here
}

type bindKind uint8

const (
	bindImport bindKind = iota + 1 // qual says what
	bindAlias                      // rhs is a dotted chain of names
	bindOther                      // the user's own value
)

// binding is one place a name gets a value.
type binding struct {
	name      string
	scope     int32
	at        int   // offset from which the binding is visible
	node      int32 // the identifier bound
	Kind      bindKind
	write     bool   // an assignment, for, with or except target
	qual      string // bindImport: qualified name; empty for relative imports
	rhs       int32  // bindAlias: the chain
	rhsScope  int32  // bindAlias: the scope rhs is evaluated in
	value     int32  // a name assigned alone (x = v, x = y = v): v; else -1
	tryBody   int32  // innermost try statement whose body holds this, or -1
	handlerOf int32  // try statement whose except clause holds this, or -1
}

// ident is one identifier of the buffer.
type ident struct {
	node  int32
	scope int32
	bind  int32 // the binding this identifier makes, or -1
}

// walker collects scopes, bindings and identifiers in one pass.
type walker struct {
	b         *Buffer
	tryBody   int32
	handlerOf int32
	work      int // steps taken, for the tests that bound them
}

func analyze(b *Buffer) {
	b.scopes = append(b.scopes, scope{Kind: ScopeModule, End: len(b.src), Parent: -1})
	if len(b.nodes) == 0 {
		b.errors = true
		return
	}
	w := walker{b: b, tryBody: -1, handlerOf: -1}
	w.visit(0, 0)
	b.writes = writeTargets(b.nodes)
	b.scopeOrder, b.scopeUp = scopeNesting(b.scopes)
	b.work = w.work + len(b.nodes) + len(b.scopes)
	sort.SliceStable(b.idents, func(i, j int) bool {
		return b.nodes[b.idents[i].node].Start < b.nodes[b.idents[j].node].Start
	})
	for i := range b.scopes {
		for _, binds := range b.scopes[i].names {
			sort.SliceStable(binds, func(i, j int) bool { return b.binds[binds[i]].at < b.binds[binds[j]].at })
		}
	}
	sort.SliceStable(b.strs, func(i, j int) bool {
		return b.nodes[b.strs[i]].Start < b.nodes[b.strs[j]].Start
	})
	for i := range b.nodes {
		if n := &b.nodes[i]; n.Kind == syntax.KindError || n.Start == n.End {
			b.errors = true
			break
		}
	}
}

func (w *walker) newScope(kind ScopeKind, name string, start, end int, parent int32) int32 {
	w.b.scopes = append(w.b.scopes, scope{Kind: kind, name: name, Start: start, End: end, Parent: parent})
	return int32(len(w.b.scopes) - 1)
}

func (w *walker) visitChildren(n, s int32) {
	b := w.b
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		w.visit(c, s)
	}
}

func (w *walker) visit(n, s int32) {
	b := w.b
	w.work++
	switch b.nodes[n].Kind {
	case syntax.KindIdentifier:
		b.idents = append(b.idents, ident{node: n, scope: s, bind: -1})
		return
	case syntax.KindImportStatement, syntax.KindImportFromStatement:
		w.importStmt(n, s)
		return
	case syntax.KindFutureImportStatement:
		w.recordIdents(n, s)
		return
	case syntax.KindFunctionDefinition:
		w.function(n, s)
		return
	case syntax.KindClassDefinition:
		w.class(n, s)
		return
	case syntax.KindLambda:
		w.lambda(n, s)
		return
	case syntax.KindListComprehension, syntax.KindDictionaryComprehension, syntax.KindSetComprehension, syntax.KindGeneratorExpression:
		w.comprehension(n, s)
		return
	case syntax.KindAssignment:
		w.assignment(n, s)
		return
	case syntax.KindAugmentedAssignment:
		for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			if b.nodes[c].Field == syntax.FieldLeft {
				w.bindTargets(c, s, int(b.nodes[n].End), true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case syntax.KindNamedExpression:
		w.walrus(n, s)
		return
	case syntax.KindForStatement:
		at := int(b.nodes[n].End)
		if r := b.tree.Child(n, syntax.FieldRight); r >= 0 {
			at = int(b.nodes[r].End)
		}
		for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			if b.nodes[c].Field == syntax.FieldLeft {
				w.bindTargets(c, s, at, true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case syntax.KindAsPattern:
		for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			if b.nodes[c].Field == syntax.FieldAlias {
				w.bindTargets(c, s, int(b.nodes[n].End), true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case syntax.KindExceptClause, syntax.KindExceptGroupClause:
		for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			if b.nodes[c].Field == syntax.FieldAlias {
				w.bindTargets(c, s, int(b.nodes[c].End), true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case syntax.KindTryStatement:
		saveBody, saveHandler := w.tryBody, w.handlerOf
		for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			switch {
			case b.nodes[c].Field == syntax.FieldBody:
				w.tryBody = n
			case b.nodes[c].Kind == syntax.KindExceptClause || b.nodes[c].Kind == syntax.KindExceptGroupClause:
				w.handlerOf = n
			}
			w.visit(c, s)
			w.tryBody, w.handlerOf = saveBody, saveHandler
		}
		return
	case syntax.KindGlobalStatement, syntax.KindNonlocalStatement:
		sc := &b.scopes[s]
		for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			if b.nodes[c].Kind != syntax.KindIdentifier {
				continue
			}
			if sc.Kind != ScopeModule {
				m := &sc.globals
				if b.nodes[n].Kind == syntax.KindNonlocalStatement {
					m = &sc.nonlocals
				}
				if *m == nil {
					*m = map[string]bool{}
				}
				(*m)[b.tree.Text(c)] = true
			}
			b.idents = append(b.idents, ident{node: c, scope: s, bind: -1})
		}
		return
	case syntax.KindCall:
		b.calls = append(b.calls, n)
	case syntax.KindString:
		b.strs = append(b.strs, n)
	}
	w.visitChildren(n, s)
}

// bindScope returns the scope a binding of name made in s lands in,
// following global and nonlocal declarations.
func (w *walker) bindScope(name string, s int32) int32 {
	sc := &w.b.scopes[s]
	if sc.globals[name] {
		return 0
	}
	if sc.nonlocals[name] {
		for p := sc.Parent; p > 0; p = w.b.scopes[p].Parent {
			w.work++
			if k := w.b.scopes[p].Kind; k == ScopeFunction || k == ScopeLambda {
				if len(w.b.scopes[p].names[name]) > 0 {
					return p
				}
			}
		}
	}
	return s
}

// bind records that identifier id gets a value in scope s from offset at.
func (w *walker) bind(id, s int32, at int, bk bindKind, write bool) *binding {
	b := w.b
	name := b.tree.Text(id)
	target := w.bindScope(name, s)
	b.binds = append(b.binds, binding{
		name: name, scope: target, at: at, node: id, Kind: bk, write: write,
		rhs: -1, rhsScope: -1, value: -1, tryBody: w.tryBody, handlerOf: w.handlerOf,
	})
	bi := int32(len(b.binds) - 1)
	sc := &b.scopes[target]
	if sc.names == nil {
		sc.names = map[string][]int32{}
	}
	sc.names[name] = append(sc.names[name], bi)
	b.idents = append(b.idents, ident{node: id, scope: s, bind: bi})
	return &b.binds[bi]
}

// bindTargets binds every name in the assignment target t as the user's
// own value; attributes and subscripts in it are visited as reads.
func (w *walker) bindTargets(t, s int32, at int, write bool) {
	b := w.b
	w.work++
	switch b.nodes[t].Kind {
	case syntax.KindIdentifier:
		w.bind(t, s, at, bindOther, write)
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindTuple, syntax.KindList, syntax.KindParenthesizedExpression,
		syntax.KindListSplatPattern, syntax.KindListSplat, syntax.KindAsPatternTarget, syntax.KindExpressionList, syntax.KindDictionarySplatPattern:
		for c := b.nodes[t].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
			w.bindTargets(c, s, at, write)
		}
	default:
		w.visit(t, s)
	}
}

// isChain reports whether n is a name or a dotted chain of names, of at
// most maxChain+1 attributes: longer chains resolve to nothing, and walking
// them for every use would make answering quadratic in their length.
func (b *Buffer) isChain(n int32) bool {
	for depth := 0; depth <= maxChain+1; depth++ {
		switch b.nodes[n].Kind {
		case syntax.KindIdentifier:
			return b.nodes[n].Start < b.nodes[n].End
		case syntax.KindAttribute:
			if b.tree.Child(n, syntax.FieldAttribute) < 0 {
				return false
			}
			n = b.tree.Child(n, syntax.FieldObject)
			if n < 0 {
				return false
			}
		default:
			return false
		}
	}
	return false
}

func (w *walker) assignment(n, s int32) { w.assignTo(n, s, -2) }

// assignTo binds the targets of assignment n. value is the right-hand side
// at the end of a chain a = b = v that n is part of, or -2 for n at its
// head: each link of the chain is walked once, not once per target.
func (w *walker) assignTo(n, s, value int32) {
	b := w.b
	left, right := b.tree.Child(n, syntax.FieldLeft), b.tree.Child(n, syntax.FieldRight)
	at := int(b.nodes[n].End)
	if value == -2 {
		value = right
		for value >= 0 && b.nodes[value].Kind == syntax.KindAssignment { // a = b = torch.nn
			w.work++
			value = b.tree.Child(value, syntax.FieldRight)
		}
	}
	if left >= 0 {
		w.bindAssigned(left, value, s, at)
	}
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		switch {
		case c == left:
		case c == right && b.nodes[c].Kind == syntax.KindAssignment:
			w.work++
			w.assignTo(c, s, value)
		default:
			w.visit(c, s)
		}
	}
}

// bindAssigned binds target from value: a name assigned a dotted chain
// becomes an alias; "a, b = x.y, z" pairs up.
func (w *walker) bindAssigned(target, value, s int32, at int) {
	b := w.b
	w.work++
	if value >= 0 && b.nodes[target].Kind == syntax.KindIdentifier {
		if b.isChain(value) {
			bd := w.bind(target, s, at, bindAlias, true)
			bd.rhs, bd.rhsScope, bd.value = value, s, value
			return
		}
		w.bind(target, s, at, bindOther, true).value = value
		return
	}
	if value >= 0 && isSequence(b.nodes[target].Kind) && isSequence(b.nodes[value].Kind) {
		ts, vs := b.tree.CodeChildren(target), b.tree.CodeChildren(value)
		if len(ts) == len(vs) {
			for i := range ts {
				w.bindAssigned(ts[i], vs[i], s, at)
			}
			return
		}
	}
	w.bindTargets(target, s, at, true)
}

func isSequence(k syntax.Kind) bool {
	switch k {
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindExpressionList, syntax.KindTuple, syntax.KindList:
		return true
	}
	return false
}

// walrus binds "name := value" in the nearest scope that is not a
// comprehension, as Python does.
func (w *walker) walrus(n, s int32) {
	b := w.b
	target := s
	for b.scopes[target].Kind == ScopeComprehension && b.scopes[target].Parent >= 0 {
		target = b.scopes[target].Parent
	}
	name, value := b.tree.Child(n, syntax.FieldName), b.tree.Child(n, syntax.FieldValue)
	if value >= 0 {
		w.visit(value, s)
	}
	if name < 0 || b.nodes[name].Kind != syntax.KindIdentifier {
		return
	}
	if value >= 0 && b.isChain(value) {
		bd := w.bind(name, target, int(b.nodes[n].End), bindAlias, true)
		bd.rhs, bd.rhsScope = value, s
	} else {
		w.bind(name, target, int(b.nodes[n].End), bindOther, true)
	}
	// The identifier is looked up from where it appears.
	b.idents[len(b.idents)-1].scope = s
}

func (w *walker) function(n, s int32) {
	b := w.b
	name, params := b.tree.Child(n, syntax.FieldName), b.tree.Child(n, syntax.FieldParameters)
	start := int(b.nodes[n].Start)
	if params >= 0 {
		start = int(b.nodes[params].Start)
	}
	fname := ""
	if name >= 0 {
		fname = b.tree.Text(name)
	}
	fs := w.newScope(ScopeFunction, fname, start, int(b.nodes[n].End), s)
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		switch b.nodes[c].Field {
		case syntax.FieldName:
			if b.nodes[c].Kind == syntax.KindIdentifier {
				w.bind(c, s, int(b.nodes[n].Start), bindOther, false)
			}
		case syntax.FieldParameters:
			w.parameters(c, s, fs)
		case syntax.FieldReturnType, syntax.FieldTypeParameters:
			w.visit(c, s)
		default:
			w.visit(c, fs)
		}
	}
}

func (w *walker) lambda(n, s int32) {
	b := w.b
	ls := w.newScope(ScopeLambda, "", int(b.nodes[n].Start), int(b.nodes[n].End), s)
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		if b.nodes[c].Field == syntax.FieldParameters {
			w.parameters(c, s, ls)
		} else {
			w.visit(c, ls)
		}
	}
}

// parameters binds the parameter names in fs; defaults and annotations
// are evaluated in the enclosing scope s.
func (w *walker) parameters(n, s, fs int32) {
	b := w.b
	at := b.scopes[fs].Start
	var param func(c int32)
	param = func(c int32) {
		switch b.nodes[c].Kind {
		case syntax.KindIdentifier:
			w.bind(c, fs, at, bindOther, false)
		case syntax.KindTypedParameter, syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			for d := b.nodes[c].FirstChild; d >= 0; d = b.nodes[d].NextSibling {
				switch b.nodes[d].Field {
				case syntax.FieldType, syntax.FieldValue:
					w.visit(d, s)
				default:
					param(d)
				}
			}
		case syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern, syntax.KindTuplePattern:
			for d := b.nodes[c].FirstChild; d >= 0; d = b.nodes[d].NextSibling {
				param(d)
			}
		default:
			w.visit(c, fs)
		}
	}
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		param(c)
	}
}

func (w *walker) class(n, s int32) {
	b := w.b
	name, body := b.tree.Child(n, syntax.FieldName), b.tree.Child(n, syntax.FieldBody)
	cname := ""
	if name >= 0 {
		cname = b.tree.Text(name)
	}
	start := int(b.nodes[n].End)
	if body >= 0 {
		start = int(b.nodes[body].Start)
	}
	cs := w.newScope(ScopeClass, cname, start, int(b.nodes[n].End), s)
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		switch b.nodes[c].Field {
		case syntax.FieldName:
			if b.nodes[c].Kind == syntax.KindIdentifier {
				w.bind(c, s, int(b.nodes[n].Start), bindOther, false)
			}
		case syntax.FieldBody:
			w.visit(c, cs)
		default:
			w.visit(c, s)
		}
	}
}

// comprehension gives the loop variables a scope of their own. The first
// iterable is evaluated in the enclosing scope, as in Python.
func (w *walker) comprehension(n, s int32) {
	b := w.b
	cs := w.newScope(ScopeComprehension, "", int(b.nodes[n].Start), int(b.nodes[n].End), s)
	first := true
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		if b.nodes[c].Kind != syntax.KindForInClause {
			w.visit(c, cs)
			continue
		}
		for d := b.nodes[c].FirstChild; d >= 0; d = b.nodes[d].NextSibling {
			switch {
			case b.nodes[d].Field == syntax.FieldLeft:
				w.bindTargets(d, cs, b.scopes[cs].Start, true)
			case first && b.nodes[d].Field == syntax.FieldRight:
				w.visit(d, s)
			default:
				w.visit(d, cs)
			}
		}
		first = false
	}
}

// dotted joins the identifiers of a dotted_name, dropping any spaces or
// comments between them.
func (b *Buffer) dotted(n int32, upTo int32) string {
	var sb strings.Builder
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		if b.nodes[c].Kind != syntax.KindIdentifier {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.Write(b.tree.Bytes(c))
		if c == upTo {
			break
		}
	}
	return sb.String()
}

// fromModule returns the module of a from-import: its dotted name, and
// whether it is relative.
func (b *Buffer) fromModule(stmt int32) (module string, relative bool) {
	m := b.tree.Child(stmt, syntax.FieldModuleName)
	if m < 0 {
		return "", false
	}
	if b.nodes[m].Kind == syntax.KindRelativeImport {
		return strings.Join(strings.Fields(b.tree.Text(m)), ""), true
	}
	return b.dotted(m, -1), false
}

func (w *walker) importStmt(n, s int32) {
	b := w.b
	from := b.nodes[n].Kind == syntax.KindImportFromStatement
	module, relative := "", false
	if from {
		module, relative = b.fromModule(n)
	}
	at := int(b.nodes[n].End)
	bound := map[int32]bool{}
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		if b.nodes[c].Kind == syntax.KindWildcardImport {
			qual := module
			if relative {
				qual = ""
			}
			b.imps = append(b.imps, w.importRecord("*", qual, module, relative, c, n, s))
			continue
		}
		if b.nodes[c].Field != syntax.FieldName {
			continue
		}
		var nameNode, local int32 = -1, -1
		switch b.nodes[c].Kind {
		case syntax.KindDottedName:
			nameNode = c
			local = b.tree.ChildOfKind(c, syntax.KindIdentifier)
		case syntax.KindAliasedImport:
			nameNode = b.tree.Child(c, syntax.FieldName)
			local = b.tree.Child(c, syntax.FieldAlias)
		}
		if nameNode < 0 || local < 0 || b.nodes[local].Kind != syntax.KindIdentifier {
			continue
		}
		full := b.dotted(nameNode, -1)
		var qual string
		switch {
		case from && relative:
		case from:
			qual = module + "." + full
		case b.nodes[c].Kind == syntax.KindAliasedImport:
			qual = full
		default: // import a.b.c binds a
			qual = b.tree.Text(local)
		}
		mod := module
		if !from {
			mod = full
		}
		bd := w.bind(local, s, at, bindImport, false)
		bd.qual = qual
		bound[local] = true
		rec := w.importRecord(b.tree.Text(local), qual, mod, relative, local, n, s)
		if from {
			rec.Imported = full
		}
		b.imps = append(b.imps, rec)
	}
	// Every other identifier of the statement is a read of a module path.
	w.recordIdents(n, s, bound)
}

// recordIdents records the identifiers under n, but for those in skip.
func (w *walker) recordIdents(n, s int32, skip ...map[int32]bool) {
	b := w.b
	if b.nodes[n].Kind == syntax.KindIdentifier {
		if len(skip) == 0 || !skip[0][n] {
			b.idents = append(b.idents, ident{node: n, scope: s, bind: -1})
		}
		return
	}
	for c := b.nodes[n].FirstChild; c >= 0; c = b.nodes[c].NextSibling {
		w.recordIdents(c, s, skip...)
	}
}

func (w *walker) importRecord(name, qual, module string, relative bool, nameNode, stmt, s int32) Import {
	b := w.b
	sc := &b.scopes[w.bindScope(name, s)]
	return Import{
		Name: name, Qualname: qual, Module: module, Relative: relative,
		NameSpan: b.tree.Span(nameNode), Stmt: b.tree.Span(stmt),
		Scope:       Scope{Kind: sc.Kind, Name: sc.name, Span: b.spanOf(sc.Start, sc.End)},
		Alternative: w.handlerOf >= 0,
	}
}

// writeTargets marks the nodes that are assigned to: the left side of an
// assignment, for or with target, and what a tuple or list there holds.
// One pass in tree order, since a node's answer follows from its parent's.
func writeTargets(nodes []syntax.Node) bitset {
	out := newBitset(len(nodes))
	for i := range nodes {
		p := nodes[i].Parent
		if p < 0 {
			continue
		}
		switch nodes[p].Kind {
		case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindTuple, syntax.KindList,
			syntax.KindParenthesizedExpression, syntax.KindListSplatPattern, syntax.KindListSplat, syntax.KindExpressionList:
			if out.has(p) {
				out.set(int32(i))
			}
		case syntax.KindAsPatternTarget:
			out.set(int32(i))
		case syntax.KindAssignment, syntax.KindAugmentedAssignment, syntax.KindForStatement, syntax.KindForInClause:
			if nodes[i].Field == syntax.FieldLeft {
				out.set(int32(i))
			}
		}
	}
	return out
}

// scopeNesting orders the scopes by start and links each to the nearest
// one holding it, for scopeAt. Scopes nest or are apart, as the nodes they
// come from do.
func scopeNesting(scopes []scope) (order, up []int32) {
	order = make([]int32, len(scopes))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(i, j int) bool { return scopes[order[i]].Start < scopes[order[j]].Start })
	up = make([]int32, len(order))
	var stack []int32 // positions in order of the scopes holding the current one
	for k, si := range order {
		for len(stack) > 0 && scopes[si].End > scopes[order[stack[len(stack)-1]]].End {
			stack = stack[:len(stack)-1]
		}
		up[k] = -1
		if len(stack) > 0 {
			up[k] = stack[len(stack)-1]
		}
		stack = append(stack, int32(k))
	}
	return order, up
}

// bitset is a set of node ids.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (s bitset) set(i int32) { s[i/64] |= 1 << (i % 64) }

func (s bitset) has(i int32) bool { return i >= 0 && int(i/64) < len(s) && s[i/64]&(1<<(i%64)) != 0 }
