package pyscope

import (
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// New builds the table of a syntax tree, visiting each node a bounded
// number of times. The Table keeps the tree.
func New(tree *syntax.Tree) *Table {
	t := &Table{tree: tree}
	root := tree.Root()
	t.scopes = append(t.scopes, Scope{Kind: ScopeModule, Node: root, Parent: -1, Self: -1})
	if root < 0 {
		return t
	}
	b := builder{t: t, tree: tree}
	b.visit(root, 0)
	b.finish()
	return t
}

// builder walks a tree once.
type builder struct {
	t    *Table
	tree *syntax.Tree
	// typeChecking is set while under "if TYPE_CHECKING:".
	typeChecking bool
	// moved are the bindings made under a global or nonlocal declaration,
	// placed once every scope's names are known.
	moved []int32
}

func (b *builder) newScope(kind ScopeKind, n, parent int32, name string) int32 {
	b.t.scopes = append(b.t.scopes, Scope{Kind: kind, Node: n, Parent: parent, Name: name, Self: -1})
	return int32(len(b.t.scopes) - 1)
}

func (b *builder) occur(n, s int32, role Role, bind int32) {
	if nd := b.tree.Node(n); nd.Start == nd.End {
		return // a name error recovery made up: nothing stands there
	}
	b.t.occs = append(b.t.occs, Occurrence{Node: n, Scope: s, Role: role, Binding: bind})
}

// last is the occurrence just recorded for identifier n, or nil when
// none was (a zero-width name).
func (b *builder) last(n int32) *Occurrence {
	if k := len(b.t.occs); k > 0 && b.t.occs[k-1].Node == n {
		return &b.t.occs[k-1]
	}
	return nil
}

// bind records that identifier id gets a value in scope s from offset at.
func (b *builder) bind(id, s int32, kind BindKind, stmt int32, at uint32) *Binding {
	name := b.tree.Text(id)
	b.t.binds = append(b.t.binds, Binding{
		Name: name, Kind: kind, Scope: s, Node: id, Stmt: stmt, Value: -1, At: at,
		TypeChecking: b.typeChecking,
	})
	bi := int32(len(b.t.binds) - 1)
	if b.t.scopes[s].declared[name] != 0 {
		b.moved = append(b.moved, bi)
	} else {
		b.addName(s, name, bi)
	}
	b.occur(id, s, RoleBind, bi)
	return &b.t.binds[bi]
}

func (b *builder) addName(s int32, name string, bi int32) {
	sc := &b.t.scopes[s]
	if sc.names == nil {
		sc.names = map[string][]int32{}
	}
	sc.names[name] = append(sc.names[name], bi)
}

func (b *builder) markLocal(s int32, name string) {
	sc := &b.t.scopes[s]
	if sc.declared[name] != 0 {
		return
	}
	if sc.local == nil {
		sc.local = map[string]bool{}
	}
	sc.local[name] = true
}

// finish places the bindings made under global and nonlocal declarations,
// and orders every scope's bindings and the identifiers.
func (b *builder) finish() {
	t := b.t
	for _, bi := range b.moved {
		bd := &t.binds[bi]
		bd.Scope, bd.Declared = b.declaredScope(bd.Name, bd.Scope), true
		b.addName(bd.Scope, bd.Name, bi)
	}
	for i := range t.scopes {
		for _, binds := range t.scopes[i].names {
			sort.SliceStable(binds, func(x, y int) bool { return t.binds[binds[x]].At < t.binds[binds[y]].At })
		}
	}
	sort.SliceStable(t.occs, func(i, j int) bool {
		return b.tree.Node(t.occs[i].Node).Start < b.tree.Node(t.occs[j].Node).Start
	})
	t.work += len(t.occs) + len(t.binds)
}

// declaredScope is where a name declared global or nonlocal in s lives:
// the module, or the nearest enclosing function that binds it.
func (b *builder) declaredScope(name string, s int32) int32 {
	switch b.t.scopes[s].declared[name] {
	case declGlobal:
		return 0
	case declNonlocal:
		for p := b.t.scopes[s].Parent; p > 0; p = b.t.scopes[p].Parent {
			b.t.work++
			ps := &b.t.scopes[p]
			switch {
			case ps.Kind == ScopeClass || ps.declared[name] == declNonlocal:
			case ps.declared[name] == declGlobal:
				return 0
			case len(ps.names[name]) > 0 || ps.local[name]:
				return p
			}
		}
		return 0
	}
	return s
}

func (b *builder) visitChildren(n, s int32) {
	for c := b.tree.FirstChild(n); c >= 0; c = b.tree.NextSibling(c) {
		b.visit(c, s)
	}
}

func (b *builder) visit(n, s int32) {
	tr := b.tree
	b.t.work++
	switch tr.Kind(n) {
	case syntax.KindIdentifier:
		b.occur(n, s, RoleRead, -1)
	case syntax.KindFunctionDefinition:
		b.function(n, s)
	case syntax.KindClassDefinition:
		b.class(n, s)
	case syntax.KindLambda:
		b.lambda(n, s)
	case syntax.KindListComprehension, syntax.KindDictionaryComprehension, syntax.KindSetComprehension, syntax.KindGeneratorExpression:
		b.comprehension(n, s)
	case syntax.KindAssignment:
		b.assignment(n, s, n, -2)
	case syntax.KindAugmentedAssignment:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			if tr.Field(c) == syntax.FieldLeft && tr.Kind(c) == syntax.KindIdentifier {
				// x += 1 reads x and binds it again: x is local here, and
				// its definition is the binding it read.
				b.markLocal(s, tr.Text(c))
			}
			b.visit(c, s)
		}
	case syntax.KindNamedExpression:
		b.walrus(n, s)
	case syntax.KindForStatement:
		at := uint32(tr.End(n))
		if r := tr.Child(n, syntax.FieldRight); r >= 0 {
			at = uint32(tr.End(r))
		}
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			if tr.Field(c) == syntax.FieldLeft {
				b.targets(c, s, BindFor, n, at)
			} else {
				b.visit(c, s)
			}
		}
	case syntax.KindAsPattern:
		b.asPattern(n, s)
	case syntax.KindImportStatement:
		b.importStmt(n, s)
	case syntax.KindImportFromStatement:
		b.importFrom(n, s)
	case syntax.KindFutureImportStatement:
		// from __future__ import x binds nothing a reader navigates.
	case syntax.KindGlobalStatement, syntax.KindNonlocalStatement:
		d := declGlobal
		if tr.Kind(n) == syntax.KindNonlocalStatement {
			d = declNonlocal
		}
		sc := &b.t.scopes[s]
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			if tr.Kind(c) != syntax.KindIdentifier {
				continue
			}
			if s != 0 {
				if sc.declared == nil {
					sc.declared = map[string]declaration{}
				}
				sc.declared[tr.Text(c)] = d
			}
			b.occur(c, s, RoleDeclared, -1)
		}
	case syntax.KindDeleteStatement:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			b.deleted(c, s)
		}
		b.visitChildren(n, s)
	case syntax.KindAttribute:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			if tr.Field(c) == syntax.FieldAttribute && tr.Kind(c) == syntax.KindIdentifier {
				b.occur(c, s, RoleAttribute, -1)
			} else {
				b.visit(c, s)
			}
		}
	case syntax.KindKeywordArgument:
		b.keywordArgument(n, s)
	case syntax.KindIfStatement:
		b.ifStatement(n, s)
	case syntax.KindCasePattern:
		b.casePattern(n, s)
	case syntax.KindKeywordPattern:
		// Foo(attr=pattern): attr is an attribute of the class matched;
		// a bare name as the pattern is a capture.
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			switch {
			case c == tr.FirstChild(n) && tr.Kind(c) == syntax.KindIdentifier:
			case tr.Kind(c) == syntax.KindDottedName:
				b.capture(c, n, s)
			default:
				b.visit(c, s)
			}
		}
	case syntax.KindSplatPattern:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			if tr.Kind(c) == syntax.KindIdentifier {
				if tr.Text(c) != "_" {
					b.bind(c, s, BindPattern, n, uint32(tr.End(n)))
				}
			} else {
				b.visit(c, s)
			}
		}
	case syntax.KindClassPattern:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			if tr.Kind(c) == syntax.KindDottedName {
				b.dottedRead(c, s)
			} else {
				b.visit(c, s)
			}
		}
	default:
		b.visitChildren(n, s)
	}
}

// isTypeChecking says whether an if statement's condition is
// TYPE_CHECKING (or typing.TYPE_CHECKING), and whether it is its negation.
func (b *builder) isTypeChecking(cond int32) (yes, negated bool) {
	text := strings.TrimSpace(b.tree.Text(cond))
	is := func(s string) bool {
		return s == "TYPE_CHECKING" || strings.HasSuffix(s, ".TYPE_CHECKING") && isDotted(strings.TrimSuffix(s, ".TYPE_CHECKING"))
	}
	if rest, ok := strings.CutPrefix(text, "not "); ok {
		return false, is(strings.TrimSpace(rest))
	}
	return is(text), false
}

func (b *builder) ifStatement(n, s int32) {
	tr := b.tree
	yes, negated := b.isTypeChecking(tr.Child(n, syntax.FieldCondition))
	saved := b.typeChecking
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch {
		case tr.Field(c) == syntax.FieldConsequence:
			b.typeChecking = saved || yes
		case tr.Kind(c) == syntax.KindElseClause || tr.Kind(c) == syntax.KindElifClause:
			b.typeChecking = saved || negated
		default:
			b.typeChecking = saved
		}
		b.visit(c, s)
	}
	b.typeChecking = saved
}

// deleted marks the names a del statement removes as local to s.
func (b *builder) deleted(n, s int32) {
	tr := b.tree
	switch tr.Kind(n) {
	case syntax.KindIdentifier:
		b.markLocal(s, tr.Text(n))
	case syntax.KindExpressionList, syntax.KindTuple, syntax.KindList, syntax.KindParenthesizedExpression:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			b.deleted(c, s)
		}
	}
}

// targets binds every name in an assignment target; attributes and
// subscripts in it are visited as reads (their objects are read).
func (b *builder) targets(n, s int32, kind BindKind, stmt int32, at uint32) {
	tr := b.tree
	b.t.work++
	switch tr.Kind(n) {
	case syntax.KindIdentifier:
		b.bind(n, s, kind, stmt, at)
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindTuple, syntax.KindList,
		syntax.KindParenthesizedExpression, syntax.KindListSplatPattern, syntax.KindListSplat, syntax.KindAsPatternTarget,
		syntax.KindExpressionList, syntax.KindDictionarySplatPattern:
		for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
			b.targets(c, s, kind, stmt, at)
		}
	case syntax.KindAttribute:
		b.visit(n, s)
		b.selfAttribute(n, s)
	default:
		b.visit(n, s)
	}
}

// selfAttribute records self.x = ... in a method as an attribute of its
// class.
func (b *builder) selfAttribute(n, s int32) {
	tr := b.tree
	sc := &b.t.scopes[s]
	if sc.Kind != ScopeFunction || sc.Method != InstanceMethod || sc.Self < 0 {
		return
	}
	obj, attr := tr.Child(n, syntax.FieldObject), tr.Child(n, syntax.FieldAttribute)
	if obj < 0 || attr < 0 || tr.Kind(obj) != syntax.KindIdentifier || tr.Text(obj) != b.t.binds[sc.Self].Name {
		return
	}
	if len(sc.names[tr.Text(obj)]) != 1 { // self rebound in the method
		return
	}
	cls := &b.t.scopes[sc.Parent]
	name := tr.Text(attr)
	if prev, ok := cls.attrs[name]; ok && !(sc.Name == "__init__" && b.methodOf(prev) != "__init__") {
		return
	}
	if cls.attrs == nil {
		cls.attrs = map[string]int32{}
	}
	cls.attrs[name] = attr
}

// methodOf is the name of the function holding node n.
func (b *builder) methodOf(n int32) string {
	tr := b.tree
	for p := tr.Parent(n); p >= 0; p = tr.Parent(p) {
		if tr.Kind(p) == syntax.KindFunctionDefinition {
			return tr.Text(tr.Child(p, syntax.FieldName))
		}
	}
	return ""
}

// assignment binds the targets of assignment n, part of statement stmt.
// value is the right-hand side at the end of a chain a = b = v, or -2 at
// the chain's head: each link is walked once.
func (b *builder) assignment(n, s, stmt, value int32) {
	tr := b.tree
	left, right := tr.Child(n, syntax.FieldLeft), tr.Child(n, syntax.FieldRight)
	if value == -2 {
		value = right
		for value >= 0 && tr.Kind(value) == syntax.KindAssignment {
			b.t.work++
			value = tr.Child(value, syntax.FieldRight)
		}
	}
	at := uint32(tr.End(stmt))
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch {
		case c == left:
			if tr.Kind(c) == syntax.KindIdentifier {
				bd := b.bind(c, s, BindAssign, stmt, at)
				bd.Value = value
			} else {
				b.targets(c, s, BindAssign, stmt, at)
			}
		case c == right && tr.Kind(c) == syntax.KindAssignment:
			b.assignment(c, s, stmt, value)
		default:
			b.visit(c, s)
		}
	}
}

// walrus binds "name := value" in the nearest scope that is not a
// comprehension, as Python does; the name is read from where it stands.
func (b *builder) walrus(n, s int32) {
	tr := b.tree
	target := s
	for b.t.scopes[target].Kind == ScopeComprehension && b.t.scopes[target].Parent >= 0 {
		target = b.t.scopes[target].Parent
	}
	name, value := tr.Child(n, syntax.FieldName), tr.Child(n, syntax.FieldValue)
	if value >= 0 {
		b.visit(value, s)
	}
	if name < 0 || tr.Kind(name) != syntax.KindIdentifier {
		return
	}
	bd := b.bind(name, target, BindWalrus, n, uint32(tr.End(n)))
	bd.Value = value
	if o := b.last(name); o != nil {
		o.Scope = s
	}
}

// asPattern binds the target of "with x as target", "except E as target"
// and "case pattern as target".
func (b *builder) asPattern(n, s int32) {
	tr := b.tree
	kind := BindWith
	if p := tr.Parent(n); p >= 0 {
		switch tr.Kind(p) {
		case syntax.KindExceptClause, syntax.KindExceptGroupClause:
			kind = BindExcept
		case syntax.KindCasePattern:
			kind = BindPattern
		}
	}
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch {
		case tr.Field(c) == syntax.FieldAlias:
			b.targets(c, s, kind, n, uint32(tr.End(c)))
		case kind == BindPattern && tr.Kind(c) == syntax.KindIdentifier:
			// case P as name: the grammar leaves the name outside a field.
			b.bind(c, s, BindPattern, n, uint32(tr.End(n)))
		default:
			b.visit(c, s)
		}
	}
}

// casePattern binds the captures of a match pattern: a bare name is a
// capture, a dotted name a value read.
func (b *builder) casePattern(n, s int32) {
	tr := b.tree
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if tr.Kind(c) == syntax.KindDottedName {
			b.capture(c, n, s)
			continue
		}
		b.visit(c, s)
	}
}

// capture handles the dotted_name d of pattern n: one name is a capture
// (but _, the wildcard), more are a value read.
func (b *builder) capture(d, n, s int32) {
	tr := b.tree
	first := tr.FirstChild(d)
	if first >= 0 && tr.NextSibling(first) < 0 && tr.Kind(first) == syntax.KindIdentifier {
		if tr.Text(first) != "_" {
			b.bind(first, s, BindPattern, n, uint32(tr.End(n)))
		}
		return
	}
	b.dottedRead(d, s)
}

// dottedRead records a dotted_name that is evaluated (a value or class in
// a pattern): its first name is read, the rest are attributes.
func (b *builder) dottedRead(n, s int32) {
	tr := b.tree
	first := true
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if tr.Kind(c) != syntax.KindIdentifier {
			continue
		}
		if first {
			b.occur(c, s, RoleRead, -1)
			first = false
		} else {
			b.occur(c, s, RoleAttribute, -1)
		}
	}
}

// keywordArgument: the name of f(name=value) names a parameter of f; in a
// class's bases (metaclass=M) it names nothing a reader navigates.
func (b *builder) keywordArgument(n, s int32) {
	tr := b.tree
	inCall := false
	if al := tr.Parent(n); al >= 0 && tr.Kind(al) == syntax.KindArgumentList {
		if call := tr.Parent(al); call >= 0 && tr.Kind(call) == syntax.KindCall {
			inCall = true
		}
	}
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if tr.Field(c) == syntax.FieldName && tr.Kind(c) == syntax.KindIdentifier {
			if inCall {
				b.occur(c, s, RoleKeyword, -1)
			}
			continue
		}
		b.visit(c, s)
	}
}

func (b *builder) function(n, s int32) {
	tr := b.tree
	name := tr.Child(n, syntax.FieldName)
	fname := ""
	if name >= 0 {
		fname = tr.Text(name)
	}
	fs := b.newScope(ScopeFunction, n, s, fname)
	if b.t.scopes[s].Kind == ScopeClass {
		b.t.scopes[fs].Method = b.methodKind(n, fname)
	}
	// A function is not under "if TYPE_CHECKING:" inside its own body.
	saved := b.typeChecking
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch tr.Field(c) {
		case syntax.FieldName:
			if tr.Kind(c) == syntax.KindIdentifier {
				b.bind(c, s, BindDef, n, uint32(tr.Start(c)))
			}
		case syntax.FieldParameters:
			b.parameters(c, s, fs, n)
		case syntax.FieldReturnType, syntax.FieldTypeParameters:
			b.visit(c, s)
		default:
			b.typeChecking = false
			b.visit(c, fs)
			b.typeChecking = saved
		}
	}
}

// methodKind says what the first parameter of def n, defined in a class
// body, receives.
func (b *builder) methodKind(n int32, name string) MethodKind {
	tr := b.tree
	switch name {
	case "__new__", "__init_subclass__", "__class_getitem__":
		return ClassMethod
	}
	if p := tr.Parent(n); p >= 0 && tr.Kind(p) == syntax.KindDecoratedDefinition {
		for d := tr.FirstChild(p); d >= 0; d = tr.NextSibling(d) {
			if tr.Kind(d) != syntax.KindDecorator {
				continue
			}
			switch strings.TrimSpace(strings.TrimPrefix(tr.Text(d), "@")) {
			case "staticmethod", "builtins.staticmethod":
				return StaticMethod
			case "classmethod", "builtins.classmethod":
				return ClassMethod
			}
		}
	}
	return InstanceMethod
}

func (b *builder) lambda(n, s int32) {
	tr := b.tree
	ls := b.newScope(ScopeLambda, n, s, "")
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if tr.Field(c) == syntax.FieldParameters {
			b.parameters(c, s, ls, n)
		} else {
			b.visit(c, ls)
		}
	}
}

// parameters binds the parameter names of def (or lambda) n in fs;
// defaults and annotations are evaluated in the enclosing scope s.
func (b *builder) parameters(params, s, fs, n int32) {
	tr := b.tree
	at := uint32(tr.Start(params))
	index := 0
	var param func(c int32)
	param = func(c int32) {
		switch tr.Kind(c) {
		case syntax.KindIdentifier:
			bd := b.bind(c, fs, BindParam, n, at)
			bd.Index = index
			sc := &b.t.scopes[fs]
			if index == 0 && sc.Method != NotMethod && sc.Method != StaticMethod {
				sc.Self = int32(len(b.t.binds) - 1)
			}
			index++
		case syntax.KindTypedParameter, syntax.KindDefaultParameter, syntax.KindTypedDefaultParameter:
			for d := tr.FirstChild(c); d >= 0; d = tr.NextSibling(d) {
				switch tr.Field(d) {
				case syntax.FieldType, syntax.FieldValue:
					b.visit(d, s)
				default:
					param(d)
				}
			}
		case syntax.KindListSplatPattern, syntax.KindDictionarySplatPattern, syntax.KindTuplePattern:
			for d := tr.FirstChild(c); d >= 0; d = tr.NextSibling(d) {
				param(d)
			}
		case syntax.KindKeywordSeparator, syntax.KindPositionalSeparator, syntax.KindComment:
		default:
			b.visit(c, s)
		}
	}
	for c := tr.FirstChild(params); c >= 0; c = tr.NextSibling(c) {
		param(c)
	}
}

func (b *builder) class(n, s int32) {
	tr := b.tree
	name := tr.Child(n, syntax.FieldName)
	cname := ""
	if name >= 0 {
		cname = tr.Text(name)
	}
	cs := b.newScope(ScopeClass, n, s, cname)
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch tr.Field(c) {
		case syntax.FieldName:
			if tr.Kind(c) == syntax.KindIdentifier {
				b.bind(c, s, BindClass, n, uint32(tr.Start(c)))
			}
		case syntax.FieldBody:
			b.visit(c, cs)
		default:
			b.visit(c, s)
		}
	}
}

// comprehension gives the loop variables a scope of their own, in effect
// throughout it. The first iterable is evaluated in the enclosing scope,
// as in Python.
func (b *builder) comprehension(n, s int32) {
	tr := b.tree
	cs := b.newScope(ScopeComprehension, n, s, "")
	at := uint32(tr.Start(n))
	first := true
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if tr.Kind(c) != syntax.KindForInClause {
			b.visit(c, cs)
			continue
		}
		for d := tr.FirstChild(c); d >= 0; d = tr.NextSibling(d) {
			switch {
			case tr.Field(d) == syntax.FieldLeft:
				b.targets(d, cs, BindFor, c, at)
			case first && tr.Field(d) == syntax.FieldRight:
				b.visit(d, s)
			default:
				b.visit(d, cs)
			}
		}
		first = false
	}
}

func (b *builder) importStmt(n, s int32) {
	tr := b.tree
	at := uint32(tr.End(n))
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch tr.Kind(c) {
		case syntax.KindDottedName: // import a.b.c binds a
			module := tr.DottedName(c)
			first := true
			for d := tr.FirstChild(c); d >= 0; d = tr.NextSibling(d) {
				if tr.Kind(d) != syntax.KindIdentifier {
					continue
				}
				if first {
					bd := b.bind(d, s, BindImport, n, at)
					bd.Module = module
					if o := b.last(d); o != nil {
						o.Role = RoleModule
					}
					first = false
					continue
				}
				b.occur(d, s, RoleModule, -1)
			}
		case syntax.KindAliasedImport: // import a.b.c as d binds a.b.c
			name, alias := tr.Child(c, syntax.FieldName), tr.Child(c, syntax.FieldAlias)
			if name >= 0 {
				b.modulePath(name, s)
			}
			if alias >= 0 && tr.Kind(alias) == syntax.KindIdentifier {
				bd := b.bind(alias, s, BindImport, n, at)
				bd.Module, bd.Alias = tr.DottedName(name), true
			}
		}
	}
}

// modulePath records the names of a dotted module path.
func (b *builder) modulePath(n, s int32) {
	tr := b.tree
	if tr.Kind(n) == syntax.KindIdentifier {
		b.occur(n, s, RoleModule, -1)
		return
	}
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		switch tr.Kind(c) {
		case syntax.KindIdentifier:
			b.occur(c, s, RoleModule, -1)
		case syntax.KindDottedName:
			b.modulePath(c, s)
		}
	}
}

func (b *builder) importFrom(n, s int32) {
	tr := b.tree
	at := uint32(tr.End(n))
	mod := tr.Child(n, syntax.FieldModuleName)
	module, level := "", 0
	if mod >= 0 {
		if tr.Kind(mod) == syntax.KindRelativeImport {
			for c := tr.FirstChild(mod); c >= 0; c = tr.NextSibling(c) {
				switch tr.Kind(c) {
				case syntax.KindImportPrefix:
					level = strings.Count(tr.Text(c), ".")
				case syntax.KindDottedName:
					module = tr.DottedName(c)
				}
			}
		} else {
			module = tr.DottedName(mod)
		}
		b.modulePath(mod, s)
	}
	for c := tr.FirstChild(n); c >= 0; c = tr.NextSibling(c) {
		if c == mod {
			continue
		}
		var name, local int32 = -1, -1
		switch tr.Kind(c) {
		case syntax.KindWildcardImport:
			if s != 0 {
				continue // a SyntaxError outside the module's top level
			}
			b.t.binds = append(b.t.binds, Binding{
				Name: "*", Kind: BindStar, Scope: 0, Node: c, Stmt: n, Value: -1, At: at,
				TypeChecking: b.typeChecking, Module: module, Level: level,
			})
			b.t.stars = append(b.t.stars, int32(len(b.t.binds)-1))
			continue
		case syntax.KindDottedName:
			name = tr.FirstChild(c)
			local = name
		case syntax.KindAliasedImport:
			if d := tr.Child(c, syntax.FieldName); d >= 0 {
				name = tr.FirstChild(d)
				if tr.Kind(d) == syntax.KindIdentifier {
					name = d
				}
			}
			local = tr.Child(c, syntax.FieldAlias)
		default:
			continue
		}
		if name < 0 || local < 0 || tr.Kind(name) != syntax.KindIdentifier || tr.Kind(local) != syntax.KindIdentifier {
			continue
		}
		bd := b.bind(local, s, BindImportFrom, n, at)
		bd.Module, bd.Level, bd.Attr = module, level, tr.Text(name)
		bi := int32(len(b.t.binds) - 1)
		if name == local {
			if o := b.last(local); o != nil {
				o.Role = RoleImported
			}
		} else {
			b.occur(name, s, RoleImported, bi)
		}
	}
}

// isDotted reports whether s is a dotted name (typing, a.b).
func isDotted(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f || i > 0 && r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return true
}
