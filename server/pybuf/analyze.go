package pybuf

import (
	"sort"
	"strings"
)

// scope is a block that binds names.
type scope struct {
	kind       ScopeKind
	name       string
	start, end int
	parent     int32
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
	kind      bindKind
	write     bool   // an assignment, for, with or except target
	qual      string // bindImport: qualified name; empty for relative imports
	rhs       int32  // bindAlias: the chain
	rhsScope  int32  // bindAlias: the scope rhs is evaluated in
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
}

func analyze(b *Buffer) {
	b.scopes = append(b.scopes, scope{kind: ScopeModule, end: len(b.src), parent: -1})
	if len(b.nodes) == 0 {
		b.errors = true
		return
	}
	w := walker{b: b, tryBody: -1, handlerOf: -1}
	w.visit(0, 0)
	sort.SliceStable(b.idents, func(i, j int) bool {
		return b.nodes[b.idents[i].node].start < b.nodes[b.idents[j].node].start
	})
	for i := range b.scopes {
		for _, binds := range b.scopes[i].names {
			sort.SliceStable(binds, func(i, j int) bool { return b.binds[binds[i]].at < b.binds[binds[j]].at })
		}
	}
	sort.SliceStable(b.strs, func(i, j int) bool {
		return b.nodes[b.strs[i]].start < b.nodes[b.strs[j]].start
	})
	for i := range b.nodes {
		if n := &b.nodes[i]; n.kind == kError || n.start == n.end {
			b.errors = true
			break
		}
	}
}

func (w *walker) newScope(kind ScopeKind, name string, start, end int, parent int32) int32 {
	w.b.scopes = append(w.b.scopes, scope{kind: kind, name: name, start: start, end: end, parent: parent})
	return int32(len(w.b.scopes) - 1)
}

func (w *walker) visitChildren(n, s int32) {
	b := w.b
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		w.visit(c, s)
	}
}

func (w *walker) visit(n, s int32) {
	b := w.b
	switch b.nodes[n].kind {
	case kIdentifier:
		b.idents = append(b.idents, ident{node: n, scope: s, bind: -1})
		return
	case kImportStatement, kImportFromStatement:
		w.importStmt(n, s)
		return
	case kFutureImportStatement:
		w.recordIdents(n, s)
		return
	case kFunctionDefinition:
		w.function(n, s)
		return
	case kClassDefinition:
		w.class(n, s)
		return
	case kLambda:
		w.lambda(n, s)
		return
	case kListComprehension, kDictComprehension, kSetComprehension, kGeneratorExpression:
		w.comprehension(n, s)
		return
	case kAssignment:
		w.assignment(n, s)
		return
	case kAugmentedAssignment:
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].field == fLeft {
				w.bindTargets(c, s, int(b.nodes[n].end), true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case kNamedExpression:
		w.walrus(n, s)
		return
	case kForStatement:
		at := int(b.nodes[n].end)
		if r := b.child(n, fRight); r >= 0 {
			at = int(b.nodes[r].end)
		}
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].field == fLeft {
				w.bindTargets(c, s, at, true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case kAsPattern:
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].field == fAlias {
				w.bindTargets(c, s, int(b.nodes[n].end), true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case kExceptClause, kExceptGroupClause:
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].field == fAlias {
				w.bindTargets(c, s, int(b.nodes[c].end), true)
			} else {
				w.visit(c, s)
			}
		}
		return
	case kTryStatement:
		saveBody, saveHandler := w.tryBody, w.handlerOf
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			switch {
			case b.nodes[c].field == fBody:
				w.tryBody = n
			case b.nodes[c].kind == kExceptClause || b.nodes[c].kind == kExceptGroupClause:
				w.handlerOf = n
			}
			w.visit(c, s)
			w.tryBody, w.handlerOf = saveBody, saveHandler
		}
		return
	case kGlobalStatement, kNonlocalStatement:
		sc := &b.scopes[s]
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].kind != kIdentifier {
				continue
			}
			if sc.kind != ScopeModule {
				m := &sc.globals
				if b.nodes[n].kind == kNonlocalStatement {
					m = &sc.nonlocals
				}
				if *m == nil {
					*m = map[string]bool{}
				}
				(*m)[b.text(c)] = true
			}
			b.idents = append(b.idents, ident{node: c, scope: s, bind: -1})
		}
		return
	case kCall:
		b.calls = append(b.calls, n)
	case kString:
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
		for p := sc.parent; p > 0; p = w.b.scopes[p].parent {
			if k := w.b.scopes[p].kind; k == ScopeFunction || k == ScopeLambda {
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
	name := b.text(id)
	target := w.bindScope(name, s)
	b.binds = append(b.binds, binding{
		name: name, scope: target, at: at, node: id, kind: bk, write: write,
		rhs: -1, rhsScope: -1, tryBody: w.tryBody, handlerOf: w.handlerOf,
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
	switch b.nodes[t].kind {
	case kIdentifier:
		w.bind(t, s, at, bindOther, write)
	case kPatternList, kTuplePattern, kListPattern, kTuple, kList, kParenthesizedExpression,
		kListSplatPattern, kListSplat, kAsPatternTarget, kExpressionList, kDictionarySplatPattern:
		for c := b.nodes[t].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			w.bindTargets(c, s, at, write)
		}
	default:
		w.visit(t, s)
	}
}

// isChain reports whether n is a name or a dotted chain of names.
func (b *Buffer) isChain(n int32) bool {
	for {
		switch b.nodes[n].kind {
		case kIdentifier:
			return b.nodes[n].start < b.nodes[n].end
		case kAttribute:
			if b.child(n, fAttribute) < 0 {
				return false
			}
			n = b.child(n, fObject)
			if n < 0 {
				return false
			}
		default:
			return false
		}
	}
}

func (w *walker) assignment(n, s int32) {
	b := w.b
	left, right := b.child(n, fLeft), b.child(n, fRight)
	at := int(b.nodes[n].end)
	value := right
	for value >= 0 && b.nodes[value].kind == kAssignment { // a = b = torch.nn
		value = b.child(value, fRight)
	}
	if left >= 0 {
		w.bindAssigned(left, value, s, at)
	}
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if c != left {
			w.visit(c, s)
		}
	}
}

// bindAssigned binds target from value: a name assigned a dotted chain
// becomes an alias; "a, b = x.y, z" pairs up.
func (w *walker) bindAssigned(target, value, s int32, at int) {
	b := w.b
	if value >= 0 && b.nodes[target].kind == kIdentifier && b.isChain(value) {
		bd := w.bind(target, s, at, bindAlias, true)
		bd.rhs, bd.rhsScope = value, s
		return
	}
	if value >= 0 && isSequence(b.nodes[target].kind) && isSequence(b.nodes[value].kind) {
		ts, vs := b.childrenOf(target), b.childrenOf(value)
		if len(ts) == len(vs) {
			for i := range ts {
				w.bindAssigned(ts[i], vs[i], s, at)
			}
			return
		}
	}
	w.bindTargets(target, s, at, true)
}

func isSequence(k kindID) bool {
	switch k {
	case kPatternList, kTuplePattern, kListPattern, kExpressionList, kTuple, kList:
		return true
	}
	return false
}

// childrenOf lists the children of n other than comments.
func (b *Buffer) childrenOf(n int32) []int32 {
	var out []int32
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].kind != kComment {
			out = append(out, c)
		}
	}
	return out
}

// walrus binds "name := value" in the nearest scope that is not a
// comprehension, as Python does.
func (w *walker) walrus(n, s int32) {
	b := w.b
	target := s
	for b.scopes[target].kind == ScopeComprehension && b.scopes[target].parent >= 0 {
		target = b.scopes[target].parent
	}
	name, value := b.child(n, fName), b.child(n, fValue)
	if value >= 0 {
		w.visit(value, s)
	}
	if name < 0 || b.nodes[name].kind != kIdentifier {
		return
	}
	if value >= 0 && b.isChain(value) {
		bd := w.bind(name, target, int(b.nodes[n].end), bindAlias, true)
		bd.rhs, bd.rhsScope = value, s
	} else {
		w.bind(name, target, int(b.nodes[n].end), bindOther, true)
	}
	// The identifier is looked up from where it appears.
	b.idents[len(b.idents)-1].scope = s
}

func (w *walker) function(n, s int32) {
	b := w.b
	name, params := b.child(n, fName), b.child(n, fParameters)
	start := int(b.nodes[n].start)
	if params >= 0 {
		start = int(b.nodes[params].start)
	}
	fname := ""
	if name >= 0 {
		fname = b.text(name)
	}
	fs := w.newScope(ScopeFunction, fname, start, int(b.nodes[n].end), s)
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		switch b.nodes[c].field {
		case fName:
			if b.nodes[c].kind == kIdentifier {
				w.bind(c, s, int(b.nodes[n].start), bindOther, false)
			}
		case fParameters:
			w.parameters(c, s, fs)
		case fReturnType, fTypeParameters:
			w.visit(c, s)
		default:
			w.visit(c, fs)
		}
	}
}

func (w *walker) lambda(n, s int32) {
	b := w.b
	ls := w.newScope(ScopeLambda, "", int(b.nodes[n].start), int(b.nodes[n].end), s)
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].field == fParameters {
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
	at := b.scopes[fs].start
	var param func(c int32)
	param = func(c int32) {
		switch b.nodes[c].kind {
		case kIdentifier:
			w.bind(c, fs, at, bindOther, false)
		case kTypedParameter, kDefaultParameter, kTypedDefaultParameter:
			for d := b.nodes[c].firstChild; d >= 0; d = b.nodes[d].nextSibling {
				switch b.nodes[d].field {
				case fType, fValue:
					w.visit(d, s)
				default:
					param(d)
				}
			}
		case kListSplatPattern, kDictionarySplatPattern, kTuplePattern:
			for d := b.nodes[c].firstChild; d >= 0; d = b.nodes[d].nextSibling {
				param(d)
			}
		default:
			w.visit(c, fs)
		}
	}
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		param(c)
	}
}

func (w *walker) class(n, s int32) {
	b := w.b
	name, body := b.child(n, fName), b.child(n, fBody)
	cname := ""
	if name >= 0 {
		cname = b.text(name)
	}
	start := int(b.nodes[n].end)
	if body >= 0 {
		start = int(b.nodes[body].start)
	}
	cs := w.newScope(ScopeClass, cname, start, int(b.nodes[n].end), s)
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		switch b.nodes[c].field {
		case fName:
			if b.nodes[c].kind == kIdentifier {
				w.bind(c, s, int(b.nodes[n].start), bindOther, false)
			}
		case fBody:
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
	cs := w.newScope(ScopeComprehension, "", int(b.nodes[n].start), int(b.nodes[n].end), s)
	first := true
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].kind != kForInClause {
			w.visit(c, cs)
			continue
		}
		for d := b.nodes[c].firstChild; d >= 0; d = b.nodes[d].nextSibling {
			switch {
			case b.nodes[d].field == fLeft:
				w.bindTargets(d, cs, b.scopes[cs].start, true)
			case first && b.nodes[d].field == fRight:
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
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].kind != kIdentifier {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.Write(b.textBytes(c))
		if c == upTo {
			break
		}
	}
	return sb.String()
}

// fromModule returns the module of a from-import: its dotted name, and
// whether it is relative.
func (b *Buffer) fromModule(stmt int32) (module string, relative bool) {
	m := b.child(stmt, fModuleName)
	if m < 0 {
		return "", false
	}
	if b.nodes[m].kind == kRelativeImport {
		return strings.Join(strings.Fields(b.text(m)), ""), true
	}
	return b.dotted(m, -1), false
}

func (w *walker) importStmt(n, s int32) {
	b := w.b
	from := b.nodes[n].kind == kImportFromStatement
	module, relative := "", false
	if from {
		module, relative = b.fromModule(n)
	}
	at := int(b.nodes[n].end)
	bound := map[int32]bool{}
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		if b.nodes[c].kind == kWildcardImport {
			qual := module
			if relative {
				qual = ""
			}
			b.imps = append(b.imps, w.importRecord("*", qual, module, relative, c, n, s))
			continue
		}
		if b.nodes[c].field != fName {
			continue
		}
		var nameNode, local int32 = -1, -1
		switch b.nodes[c].kind {
		case kDottedName:
			nameNode = c
			local = b.firstOfKind(c, kIdentifier)
		case kAliasedImport:
			nameNode = b.child(c, fName)
			local = b.child(c, fAlias)
		}
		if nameNode < 0 || local < 0 || b.nodes[local].kind != kIdentifier {
			continue
		}
		full := b.dotted(nameNode, -1)
		var qual string
		switch {
		case from && relative:
		case from:
			qual = module + "." + full
		case b.nodes[c].kind == kAliasedImport:
			qual = full
		default: // import a.b.c binds a
			qual = b.text(local)
		}
		mod := module
		if !from {
			mod = full
		}
		bd := w.bind(local, s, at, bindImport, false)
		bd.qual = qual
		bound[local] = true
		b.imps = append(b.imps, w.importRecord(b.text(local), qual, mod, relative, local, n, s))
	}
	// Every other identifier of the statement is a read of a module path.
	w.recordIdents(n, s, bound)
}

// recordIdents records the identifiers under n, but for those in skip.
func (w *walker) recordIdents(n, s int32, skip ...map[int32]bool) {
	b := w.b
	if b.nodes[n].kind == kIdentifier {
		if len(skip) == 0 || !skip[0][n] {
			b.idents = append(b.idents, ident{node: n, scope: s, bind: -1})
		}
		return
	}
	for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
		w.recordIdents(c, s, skip...)
	}
}

func (w *walker) importRecord(name, qual, module string, relative bool, nameNode, stmt, s int32) Import {
	b := w.b
	sc := &b.scopes[w.bindScope(name, s)]
	return Import{
		Name: name, Qualname: qual, Module: module, Relative: relative,
		NameSpan: b.span(nameNode), Stmt: b.span(stmt),
		Scope:       Scope{Kind: sc.kind, Name: sc.name, Span: b.spanOf(sc.start, sc.end)},
		Alternative: w.handlerOf >= 0,
	}
}
