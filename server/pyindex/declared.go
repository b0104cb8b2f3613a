package pyindex

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Declared types: a value whose type the text declares rather than
// assigns. Parameter, variable and return annotations (strings,
// Optional, Union, X | Y), the elements of typed containers (for
// targets, subscripts, walrus), self attributes declared or assigned
// from typed values, and the index's stubs for compiled classes. An
// annotation is read from its text, in the scope it is written in; a
// union gives every class it names, as pyright does.

const (
	// maxAnnNodes bounds the parts of one annotation read; maxAnnDepth
	// the nesting of annotations, aliases and containers one value
	// passes through; maxCandidates the classes a union contributes.
	maxAnnNodes   = 64
	maxAnnDepth   = 8
	maxCandidates = 8
)

// ann is an annotation read from its text: a dotted name and its
// subscript's arguments (Optional[Foo], dict[str, Foo]), or values known
// already (ents). call marks the value of a call of name (an index
// variable x = make()): a class's instance or the function's return.
type ann struct {
	name string
	args []*ann
	call bool
	ctx  annCtx
	ents []entity
}

// annCtx is where an annotation's names are looked up: a scope of the
// source at an offset, or beside a place of the index.
type annCtx struct {
	local bool
	scope int32
	off   uint32
	t     target
}

// parseAnn reads annotation text s.
func parseAnn(s string, ctx annCtx) *ann {
	budget := maxAnnNodes
	return parseAnnIn(strings.TrimSpace(s), ctx, &budget, 0)
}

func parseAnnIn(s string, ctx annCtx, budget *int, depth int) *ann {
	*budget--
	if *budget < 0 || depth > maxAnnDepth || s == "" {
		return &ann{ctx: ctx}
	}
	for _, q := range []string{`"""`, `'''`, `"`, `'`} {
		if len(s) >= 2*len(q) && strings.HasPrefix(s, q) && strings.HasSuffix(s, q) {
			// A forward reference: the same annotation, quoted.
			return parseAnnIn(strings.TrimSpace(s[len(q):len(s)-len(q)]), ctx, budget, depth+1)
		}
	}
	if parts := splitTopLevelAt(s, '|'); len(parts) > 1 {
		a := &ann{name: "Union", ctx: ctx}
		for _, p := range parts {
			a.args = append(a.args, parseAnnIn(p, ctx, budget, depth+1))
		}
		return a
	}
	if strings.HasSuffix(s, "]") {
		open := -1
		walkTopLevel(s, 0, func(i int, c byte, d int) bool {
			if c == '[' && d == 1 {
				open = i
				return false
			}
			return true
		})
		if name := strings.TrimSpace(s[:max(open, 0)]); open > 0 && isDottedName(name) {
			a := &ann{name: name, ctx: ctx}
			for _, p := range splitTopLevel(s[open+1 : len(s)-1]) {
				a.args = append(a.args, parseAnnIn(p, ctx, budget, depth+1))
			}
			return a
		}
		return &ann{ctx: ctx}
	}
	if s == "..." || isDottedName(s) {
		return &ann{name: s, ctx: ctx}
	}
	return &ann{ctx: ctx}
}

// splitTopLevelAt splits s at sep outside brackets and strings.
func splitTopLevelAt(s string, sep byte) []string {
	var parts []string
	start := 0
	walkTopLevel(s, 0, func(i int, c byte, depth int) bool {
		if c == sep && depth == 0 {
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
		return true
	})
	return append(parts, strings.TrimSpace(s[start:]))
}

func lastPart(dotted string) string {
	return dotted[strings.LastIndexByte(dotted, '.')+1:]
}

// What a name of typing (or of the builtins) means in an annotation, by
// its last part: typing.Optional, t.Optional and Optional alike.
var (
	unionNames   = map[string]bool{"Optional": true, "Union": true}
	wrapperNames = map[string]bool{"Annotated": true, "Final": true, "ClassVar": true, "Required": true,
		"NotRequired": true, "ReadOnly": true, "InitVar": true}
	opaqueNames = map[string]bool{"": true, "None": true, "Any": true, "object": true, "...": true,
		"NoReturn": true, "Never": true, "TypeVar": true}
	// sequenceNames hold their elements in their first argument.
	sequenceNames = map[string]bool{"List": true, "list": true, "Sequence": true, "MutableSequence": true,
		"Iterable": true, "Iterator": true, "Generator": true, "Set": true, "set": true, "FrozenSet": true,
		"frozenset": true, "AbstractSet": true, "MutableSet": true, "Collection": true, "Deque": true,
		"deque": true, "Reversible": true, "AsyncIterable": true, "AsyncIterator": true,
		"AsyncGenerator": true, "KeysView": true, "ValuesView": true}
	// mappingNames iterate over their keys and subscript to their values.
	mappingNames = map[string]bool{"Dict": true, "dict": true, "Mapping": true, "MutableMapping": true,
		"DefaultDict": true, "defaultdict": true, "OrderedDict": true, "Counter": true, "ChainMap": true}
	tupleNames = map[string]bool{"Tuple": true, "tuple": true}
)

// instances are the values annotation a declares: instances of the
// classes it names (every member of a union), classes for Type[X].
func (n *navigator) instances(a *ann, depth int) []entity {
	if a == nil || depth > maxAnnDepth || n.r.count() != nil {
		return nil
	}
	if a.ents != nil {
		return a.ents
	}
	last := lastPart(a.name)
	switch {
	case opaqueNames[last] && !a.call:
		return nil
	case unionNames[last]:
		var out []entity
		for _, x := range a.args {
			out = appendCandidates(out, n.instances(x, depth+1))
		}
		return out
	case wrapperNames[last]:
		if len(a.args) > 0 {
			return n.instances(a.args[0], depth+1)
		}
		return nil
	case last == "Type" || last == "type":
		if len(a.args) != 1 {
			return nil
		}
		out := n.instances(a.args[0], depth+1)
		for i := range out {
			if out[i].kind == entInstance {
				out[i].kind = entClass
			}
		}
		return out
	}
	e, err := n.annName(a)
	if err != nil {
		return nil
	}
	if e, err = n.deref(e); err != nil {
		return nil
	}
	switch e.kind {
	case entClass:
		e.kind = entInstance
		return []entity{e}
	case entFunction:
		if r, ok := n.returnAnn(e); ok && a.call {
			return n.instances(r, depth+1)
		}
	case entOpaque:
		// A type alias (Foo = Union[A, B]): its value, read as an
		// annotation.
		if v, ok := n.aliasOf(e); ok && !a.call {
			return n.instances(v, depth+1)
		}
	}
	return nil
}

// appendCandidates adds the entities of more that out lacks, up to
// maxCandidates.
func appendCandidates(out, more []entity) []entity {
	for _, e := range more {
		if len(out) >= maxCandidates {
			break
		}
		dup := false
		for _, o := range out {
			if o.kind == e.kind && o.cls == e.cls && o.node == e.node && o.t == e.t {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, e)
		}
	}
	return out
}

// annName is what the name of annotation a names where it is written.
func (n *navigator) annName(a *ann) (entity, error) {
	if a.ctx.local {
		return n.dotted(a.name, a.ctx.scope, a.ctx.off)
	}
	if a.ctx.t.mod == nil { // made here (enumerate's int): no place to look
		return entity{}, n.errNotFound("%s names nothing here", a.name)
	}
	saved := len(n.r.chain)
	defer func() { n.r.chain = n.r.chain[:saved] }()
	t, err := n.r.exprIn(a.ctx.t, a.name)
	if err != nil {
		return entity{}, err
	}
	if t, err = n.r.derefClass(t); err != nil {
		return entity{}, err
	}
	return indexEntity(t), nil
}

// dotted evaluates a dotted name read in scope at off; a name bound only
// later in the file (a forward reference) is its last binding.
func (n *navigator) dotted(name string, scope int32, off uint32) (entity, error) {
	first, rest, _ := strings.Cut(name, ".")
	b := n.lookup(first, scope, off)
	if b < 0 {
		b = n.lookup(first, scope, ^uint32(0))
	}
	if b < 0 {
		return entity{}, n.errNotFound("%s is a builtin or bound at run time", first)
	}
	e, err := n.bindingEntity(b, first)
	for _, p := range strings.Split(rest, ".") {
		if err != nil || p == "" {
			break
		}
		if e, err = n.attr(e, p); err == nil {
			e, err = n.rebound(e)
		}
	}
	return e, err
}

// aliasOf reads the value of a variable as an annotation: a type alias.
func (n *navigator) aliasOf(e entity) (*ann, bool) {
	switch {
	case e.bind >= 0:
		bd := n.tab.Binding(e.bind)
		if bd.Kind != pyscope.BindAssign || bd.Value < 0 {
			return nil, false
		}
		v := n.tree.Unwrap(bd.Value)
		if k := n.tree.Kind(v); k != syntax.KindSubscript && k != syntax.KindBinaryOperator {
			return nil, false
		}
		return parseAnn(n.tree.Text(v), annCtx{local: true, scope: bd.Scope, off: uint32(n.tree.Start(bd.Node))}), true
	case e.t.b != nil && e.t.site == nil && e.t.b.kind == KindVariable:
		v := e.t.b.value
		if strings.HasSuffix(v, "…") {
			v = n.r.ix.valueText(e.t) // cut short in the index
		}
		if !strings.HasSuffix(v, "]") && !strings.Contains(v, "|") {
			return nil, false
		}
		return parseAnn(v, annCtx{t: e.t}), true
	}
	return nil, false
}

// returnAnn is the return annotation of a function; without one, what
// its return statements return (inferReturn).
func (n *navigator) returnAnn(f entity) (*ann, bool) {
	if f.fn >= 0 {
		ret := n.tree.Child(f.fn, syntax.FieldReturnType)
		if ret < 0 {
			return n.inferReturn(f)
		}
		scope := int32(0)
		if fs := n.tab.ScopeOf(f.fn); fs >= 0 {
			scope = max(n.tab.Scope(fs).Parent, 0)
		}
		return parseAnn(n.tree.Text(ret), annCtx{local: true, scope: scope, off: uint32(n.tree.Start(f.fn))}), true
	}
	if f.t.b == nil || f.t.site != nil || f.t.b.kind != KindFunction {
		return nil, false
	}
	ret, ok := returnText(f.t.b.sig)
	if !ok {
		return n.inferReturn(f)
	}
	return parseAnn(ret, annCtx{t: f.t}), true
}

const (
	// maxInferDepth bounds the functions whose return types one answer
	// infers inside one another; maxInferNodes the nodes of a body read
	// for its return statements.
	maxInferDepth = 3
	maxInferNodes = 50000
	// maxNarrowStatements bounds the statements before a read that are
	// looked at for an isinstance test: narrowing is near the read.
	maxNarrowStatements = 256
)

// inferReturn is what a function without a return annotation returns,
// as pyright infers it where the text shows it: the union of what its
// return statements' values are declared as (a class called, self, a
// typed name). A generator, or a body too long, infers nothing.
func (n *navigator) inferReturn(f entity) (*ann, bool) {
	if n.inferring >= maxInferDepth {
		return nil, false
	}
	if f.fn >= 0 {
		key := fmt.Sprintf("returns\x00%d", f.fn)
		if n.r.enter(key) != nil {
			return nil, false
		}
		defer n.r.leave(key)
		ents := n.returned(f.fn)
		return &ann{ents: ents}, len(ents) > 0
	}
	if f.t.b == nil || f.t.file == nil || f.t.file.stub {
		return nil, false
	}
	// A function of another file: its returns, read by a navigator of
	// that file, kept where they are classes of the index.
	tab := n.r.ix.table(f.t.file)
	if tab == nil {
		return nil, false
	}
	def := functionAt(tab.Tree(), int(f.t.b.line), int(f.t.b.col))
	if def < 0 {
		return nil, false
	}
	key := "returns\x00" + f.t.file.rel + "\x00" + f.t.path
	if n.r.enter(key) != nil {
		return nil, false
	}
	defer n.r.leave(key)
	m := f.t.mod
	sub := n.r.ix.navigator(Source{Module: m.name, Package: m.isPkg && f.t.file == m.py, Path: n.r.ix.abs(f.t.file), Rel: f.t.file.rel, Table: tab})
	sub.inferring = n.inferring + 1
	sub.r.steps = n.r.steps
	ents := sub.returned(def)
	n.r.steps = sub.r.steps
	var out []entity
	for _, e := range ents {
		if g, ok := sub.global(e); ok {
			out = append(out, g)
		}
	}
	return &ann{ents: out}, len(out) > 0
}

// returned are the instances the return statements of def give.
func (n *navigator) returned(def int32) []entity {
	tr := n.tree
	fs := n.tab.ScopeOf(def)
	body := tr.Child(def, syntax.FieldBody)
	if fs < 0 || body < 0 {
		return nil
	}
	var out []entity
	end := tr.End(body)
	skip := -1 // the end of a nested def, class or lambda
	for i := body + 1; int(i) < tr.Len() && tr.Start(i) < end; i++ {
		if int(i-body) > maxInferNodes {
			return nil
		}
		if (i-body)%256 == 0 && n.r.count() != nil { // the walk counts against the navigation's bound
			return nil
		}
		if tr.Start(i) < skip {
			continue
		}
		switch tr.Kind(i) {
		case syntax.KindFunctionDefinition, syntax.KindClassDefinition, syntax.KindLambda:
			skip = tr.End(i)
		case syntax.KindYield:
			return nil // a generator
		case syntax.KindReturnStatement:
			cs := tr.CodeChildren(i)
			if len(cs) != 1 {
				continue
			}
			if a, ok := n.exprAnn(cs[0], fs, uint32(tr.Start(i)), 0); ok {
				out = appendCandidates(out, n.instances(a, 0))
			}
		}
	}
	return out
}

// global is entity e of this navigator's file as the index's: a class
// of the file by its binding.
func (n *navigator) global(e entity) (entity, bool) {
	if e.cls.local >= 0 {
		sc := n.tab.Scope(e.cls.local)
		name := n.tree.Child(sc.Node, syntax.FieldName)
		f := n.r.ix.fileByRel(n.src.Rel)
		if name < 0 || f == nil {
			return entity{}, false
		}
		pos := n.tree.StartPos(name)
		path, b := findClass(n.r.ix.load(f).bindings, "", int32(pos.Line), int32(pos.Col))
		if b == nil {
			return entity{}, false
		}
		m := n.r.ix.modules[f.module]
		if m == nil {
			return entity{}, false
		}
		e.cls = classRef{local: -1, t: target{mod: m, file: f, b: b, path: path}}
	}
	if e.kind != entInstance && e.kind != entClass {
		return entity{}, false
	}
	e.node, e.bind, e.fn, e.t, e.alts = -1, -1, -1, e.cls.t, nil
	return e, true
}

// findClass is the class binding at line and col among bs and their
// members, with its dotted path.
func findClass(bs []binding, prefix string, line, col int32) (string, *binding) {
	for i := range bs {
		b := &bs[i]
		if b.kind != KindClass {
			continue
		}
		path := joinName(prefix, b.name)
		if b.line == line && b.col == col {
			return path, b
		}
		if b.line < line && b.endLine >= line {
			if p, m := findClass(b.members, path, line, col); m != nil {
				return p, m
			}
		}
	}
	return "", nil
}

// returnText is the return annotation of an index function's signature,
// "(params) -> Ret".
func returnText(sig string) (string, bool) {
	open := strings.IndexByte(sig, '(')
	if open < 0 {
		return "", false
	}
	end := -1
	walkTopLevel(sig, open, func(i int, c byte, d int) bool {
		if c == ')' && d == 0 {
			end = i
			return false
		}
		return true
	})
	if end < 0 {
		return "", false
	}
	ret, ok := strings.CutPrefix(strings.TrimSpace(sig[end+1:]), "->")
	return strings.TrimSpace(ret), ok && strings.TrimSpace(ret) != ""
}

// decorators are the decorator expressions of function f.
func (n *navigator) decorators(f entity) []string {
	var decos []string
	if f.fn >= 0 {
		if p := n.tree.Parent(f.fn); p >= 0 && n.tree.Kind(p) == syntax.KindDecoratedDefinition {
			for d := range n.tree.Children(p) {
				if n.tree.Kind(d) == syntax.KindDecorator {
					decos = append(decos, strings.TrimPrefix(strings.TrimSpace(n.tree.Text(d)), "@"))
				}
			}
		}
	} else if f.t.b != nil && f.t.site == nil && f.t.b.decorators != "" {
		decos = strings.Split(f.t.b.decorators, "\n")
	}
	return decos
}

// propertyGetter is the getter of function f when f is read as a value
// (@property, @cached_property; the getter of an @x.setter).
func (n *navigator) propertyGetter(f entity) (entity, bool) {
	setter := false
	for _, d := range n.decorators(f) {
		switch last := lastPart(strings.TrimSpace(d)); last {
		case "property", "cached_property", "abstractproperty":
			return f, true
		case "setter", "deleter", "getter":
			setter = true
		}
	}
	if !setter {
		return entity{}, false
	}
	// @x.setter rebinds x: the getter is the @property def of the name.
	isGetter := func(g entity) bool {
		for _, d := range n.decorators(g) {
			if l := lastPart(strings.TrimSpace(d)); l == "property" || l == "cached_property" {
				return true
			}
		}
		return false
	}
	if f.fn >= 0 {
		fs := n.tab.ScopeOf(f.fn)
		if fs < 0 || n.tab.Scope(fs).Parent < 0 {
			return entity{}, false
		}
		for _, b := range n.tab.Names(n.tab.Scope(fs).Parent, n.tab.Scope(fs).Name) {
			if bd := n.tab.Binding(b); bd.Kind == pyscope.BindDef {
				g := n.sourceEntity(bd.Node, b)
				g.kind, g.fn = entFunction, bd.Stmt
				if isGetter(g) {
					return g, true
				}
			}
		}
		return entity{}, false
	}
	o, ok := n.r.owner(f.t)
	if !ok {
		return entity{}, false
	}
	for i := range o.b.members {
		m := &o.b.members[i]
		if m.name == f.t.b.name && m.kind == KindFunction {
			g := indexEntity(target{mod: f.t.mod, file: f.t.file, b: m, path: f.t.path})
			if isGetter(g) {
				return g, true
			}
		}
	}
	return entity{}, false
}

// candidates makes ents (one class or several) the value of e: the first
// is the value, the others its alternatives; each keeps e's place.
func candidates(e entity, ents []entity) entity {
	out := make([]entity, len(ents))
	for i, c := range ents {
		c.node, c.t, c.bind, c.alts = e.node, e.t, e.bind, nil
		out[i] = c
	}
	first := out[0]
	if len(out) > 1 {
		first.alts = out[1:]
	}
	return first
}

// declared is the declared type of a value the text does not assign a
// class to: a binding of the source, a self attribute (of the source or
// of the index), an index variable.
func (n *navigator) declared(e entity, depth int) (*ann, bool) {
	if depth > maxAnnDepth {
		return nil, false
	}
	switch {
	case e.bind >= 0:
		return n.bindingAnn(e.bind, depth)
	case e.node >= 0:
		return n.selfAttrAnn(e.node, depth)
	case e.t.site != nil && e.t.site.file != nil && e.t.site.kind == KindVariable && e.t.site.owner != "":
		return n.siteAnn(e.t, depth)
	case e.t.b != nil && e.t.b.kind == KindVariable:
		if a, ok := strings.CutPrefix(e.t.b.sig, ":"); ok {
			return parseAnn(a, annCtx{t: e.t}), true
		}
		if callee, ok := calleeOf(e.t.b.value); ok {
			return &ann{name: callee, call: true, ctx: annCtx{t: e.t}}, true
		}
	}
	return nil, false
}

// bindingAnn is the declared type of binding b: its annotation, the type
// of the value assigned, the element of what a for loop walks, or the
// annotation another binding of the name in its scope declares.
func (n *navigator) bindingAnn(b int32, depth int) (*ann, bool) {
	key := fmt.Sprintf("declared\x00%d", b)
	if n.r.enter(key) != nil {
		return nil, false
	}
	defer n.r.leave(key)
	tr := n.tree
	bd := n.tab.Binding(b)
	off := uint32(tr.Start(bd.Node))
	switch bd.Kind {
	case pyscope.BindParam:
		if a, ok := n.paramAnn(b); ok {
			return a, true
		}
	case pyscope.BindAssign:
		if t := n.assignType(bd.Node); t >= 0 {
			return parseAnn(tr.Text(t), annCtx{local: true, scope: bd.Scope, off: off}), true
		}
		if bd.Value >= 0 {
			if a, ok := n.exprAnn(bd.Value, bd.Scope, off, depth+1); ok {
				return a, true
			}
		} else if a, ok := n.unpackAnn(bd, depth); ok {
			return a, true
		}
	case pyscope.BindWalrus:
		if bd.Value >= 0 {
			return n.exprAnn(bd.Value, n.occScope(bd.Node, bd.Scope), off, depth+1)
		}
		return nil, false
	case pyscope.BindFor:
		return n.forAnn(bd, depth)
	default:
		return nil, false
	}
	// x: Foo declared once, assigned elsewhere: the declaration holds.
	names := n.tab.Names(bd.Scope, bd.Name)
	for _, o := range names {
		od := n.tab.Binding(o)
		switch {
		case o == b:
		case od.Kind == pyscope.BindParam:
			if a, ok := n.paramAnn(o); ok {
				return a, true
			}
		case od.Kind == pyscope.BindAssign:
			if t := n.assignType(od.Node); t >= 0 {
				return parseAnn(tr.Text(t), annCtx{local: true, scope: od.Scope, off: uint32(tr.Start(od.Node))}), true
			}
		}
	}
	// Else what another assignment of the name gives (x = w; x = x.f()
	// in a loop): pyright's type of x is the union of them all.
	if len(names) > 1 && len(names) <= maxCandidates && bd.Scope != 0 {
		for _, o := range names {
			if od := n.tab.Binding(o); o != b && od.Kind == pyscope.BindAssign && od.Value >= 0 {
				if a, ok := n.exprAnn(od.Value, od.Scope, uint32(tr.Start(od.Node)), depth+1); ok {
					return a, true
				}
			}
		}
	}
	return nil, false
}

// occScope is the scope identifier id is read in (a walrus inside a
// comprehension binds outside it but reads inside).
func (n *navigator) occScope(id, fallback int32) int32 {
	if o, ok := n.tab.OccurrenceOf(id); ok {
		return o.Scope
	}
	return fallback
}

// paramAnn is the annotation of parameter binding b, read in the scope
// around its def; *args and **kwargs are left out.
func (n *navigator) paramAnn(b int32) (*ann, bool) {
	tr := n.tree
	bd := n.tab.Binding(b)
	p := tr.Parent(bd.Node)
	splat := tr.Kind(p)
	if splat == syntax.KindListSplatPattern || splat == syntax.KindDictionarySplatPattern {
		p = tr.Parent(p)
	}
	if k := tr.Kind(p); k != syntax.KindTypedParameter && k != syntax.KindTypedDefaultParameter {
		return nil, false
	}
	t := tr.Child(p, syntax.FieldType)
	if t < 0 {
		return nil, false
	}
	scope := n.tab.Scope(bd.Scope).Parent
	if scope < 0 {
		scope = 0
	}
	a := parseAnn(tr.Text(t), annCtx{local: true, scope: scope, off: uint32(tr.Start(bd.Stmt))})
	switch splat {
	case syntax.KindListSplatPattern: // *args: T is a tuple of T
		return &ann{name: "tuple", args: []*ann{a, {name: "..."}}}, true
	case syntax.KindDictionarySplatPattern: // **kwargs: T maps str to T
		return &ann{name: "dict", args: []*ann{{name: "str"}, a}}, true
	}
	return a, true
}

// assignType is the annotation of "name: T = ..." whose target is
// identifier id, or -1.
func (n *navigator) assignType(id int32) int32 {
	p := n.tree.Parent(id)
	if p < 0 || n.tree.Kind(p) != syntax.KindAssignment || n.tree.Child(p, syntax.FieldLeft) != id {
		return -1
	}
	return n.tree.Child(p, syntax.FieldType)
}

// selfAttrAnn is the declared type of the attribute id of "self.id: T =
// v" or "self.id = v" in a method of the source.
func (n *navigator) selfAttrAnn(id int32, depth int) (*ann, bool) {
	tr := n.tree
	a := tr.Parent(id)
	if a < 0 || tr.Kind(a) != syntax.KindAttribute {
		return nil, false
	}
	key := fmt.Sprintf("declared-attr\x00%d", id)
	if n.r.enter(key) != nil {
		return nil, false
	}
	defer n.r.leave(key)
	scope := n.occScope(tr.Child(a, syntax.FieldObject), 0)
	asg := tr.Parent(a)
	if asg < 0 || tr.Kind(asg) != syntax.KindAssignment || tr.Child(asg, syntax.FieldLeft) != a {
		// self.a, self.b = state: only a declaration in the hierarchy.
		if cs := n.tab.Scope(scope).Parent; cs >= 0 && n.tab.Scope(cs).Kind == pyscope.ScopeClass {
			return n.declaredMember(classRef{local: cs}, tr.Text(id))
		}
		return nil, false
	}
	off := uint32(tr.Start(asg))
	if t := tr.Child(asg, syntax.FieldType); t >= 0 {
		return parseAnn(tr.Text(t), annCtx{local: true, scope: scope, off: off}), true
	}
	// A class of the hierarchy that declares the attribute (x: T in its
	// body) gives its type, as pyright reads it.
	if cs := n.tab.Scope(scope).Parent; cs >= 0 && n.tab.Scope(cs).Kind == pyscope.ScopeClass {
		if a, ok := n.declaredMember(classRef{local: cs}, tr.Text(id)); ok {
			return a, true
		}
	}
	if v := tr.Child(asg, syntax.FieldRight); v >= 0 {
		return n.exprAnn(v, scope, off, depth+1)
	}
	return nil, false
}

// declaredMember is the annotation a class of c's method resolution
// order declares attribute name with in its body.
func (n *navigator) declaredMember(c classRef, name string) (*ann, bool) {
	mro, err := n.r.mro(c)
	if err != nil {
		return nil, false
	}
	for _, k := range mro {
		if k.local >= 0 {
			for _, b := range n.tab.Names(k.local, name) {
				bd := n.tab.Binding(b)
				if t := n.assignType(bd.Node); bd.Kind == pyscope.BindAssign && t >= 0 {
					return parseAnn(n.tree.Text(t), annCtx{local: true, scope: k.local, off: uint32(n.tree.Start(bd.Node))}), true
				}
			}
			continue
		}
		if m := best(k.t.b.members, name); m != nil && m.kind == KindVariable {
			if a, ok := strings.CutPrefix(m.sig, ":"); ok {
				return parseAnn(a, annCtx{t: target{mod: k.t.mod, file: k.t.file, b: m, path: k.t.path + "." + name}}), true
			}
		}
	}
	return nil, false
}

// siteAnn is the declared type of an attribute a method of an index class
// assigns through self: its annotation, the annotation of the parameter
// assigned, or the call assigned.
func (n *navigator) siteAnn(t target, depth int) (*ann, bool) {
	s := t.site
	tab := n.r.ix.table(s.file)
	if tab == nil {
		return nil, false
	}
	tr := tab.Tree()
	occs := tab.Occurrences()
	lo, hi := 0, len(occs)
	for lo < hi { // occurrences are in source order
		mid := (lo + hi) / 2
		p := tr.StartPos(occs[mid].Node)
		if p.Line < int(s.line) || p.Line == int(s.line) && p.Col < int(s.col) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo >= len(occs) || tr.StartPos(occs[lo].Node) != (syntax.Pos{Line: int(s.line), Col: int(s.col)}) {
		return nil, false
	}
	a := tr.Parent(occs[lo].Node)
	asg := tr.Parent(a)
	direct := asg >= 0 && tr.Kind(asg) == syntax.KindAssignment && tr.Child(asg, syntax.FieldLeft) == a
	ctx := annCtx{t: target{mod: t.mod, file: s.file}}
	if ty := tr.Child(asg, syntax.FieldType); direct && ty >= 0 {
		return parseAnn(tr.Text(ty), ctx), true
	}
	if f := n.r.ix.load(s.file); f != nil {
		if path, b := findClassPath(f.bindings, "", s.owner); b != nil {
			if a, ok := n.declaredMember(classRef{local: -1, t: target{mod: t.mod, file: s.file, b: b, path: path}}, s.name); ok {
				return a, true
			}
		}
	}
	if !direct {
		return nil, false
	}
	v := tr.Unwrap(tr.Child(asg, syntax.FieldRight))
	switch tr.Kind(v) {
	case syntax.KindIdentifier:
		// self.x = x: the parameter's annotation.
		o, ok := tab.OccurrenceOf(v)
		if !ok {
			return nil, false
		}
		b := tab.Lookup(tr.Text(v), o.Scope, uint32(tr.Start(v)), nil).Binding
		if b < 0 || tab.Binding(b).Kind != pyscope.BindParam {
			return nil, false
		}
		p := tr.Parent(tab.Binding(b).Node)
		if k := tr.Kind(p); k != syntax.KindTypedParameter && k != syntax.KindTypedDefaultParameter {
			return nil, false
		}
		if ty := tr.Child(p, syntax.FieldType); ty >= 0 {
			return parseAnn(tr.Text(ty), ctx), true
		}
	case syntax.KindCall:
		if fn := tr.Child(v, syntax.FieldFunction); fn >= 0 && isDottedName(tr.Text(fn)) && !strings.HasPrefix(tr.Text(fn), "self.") {
			return &ann{name: tr.Text(fn), call: true, ctx: ctx}, true
		}
	}
	return nil, false
}

// exprAnn is the declared type of expression x read in scope at off.
func (n *navigator) exprAnn(x, scope int32, off uint32, depth int) (*ann, bool) {
	if depth > maxAnnDepth || n.r.count() != nil {
		return nil, false
	}
	tr := n.tree
	x = tr.Unwrap(x)
	switch tr.Kind(x) {
	case syntax.KindIdentifier, syntax.KindAttribute:
		e, err := n.eval(x, scope, off)
		if err != nil {
			return nil, false
		}
		return n.entityAnn(e, depth+1)
	case syntax.KindCall:
		fn, args := tr.Child(x, syntax.FieldFunction), tr.Child(x, syntax.FieldArguments)
		if fn < 0 {
			return nil, false
		}
		if lastPart(tr.Text(fn)) == "cast" && args >= 0 {
			// typing.cast(T, v) is a T.
			if cs := tr.CodeChildren(args); len(cs) == 2 {
				return parseAnn(tr.Text(cs[0]), annCtx{local: true, scope: scope, off: off}), true
			}
		}
		if l := lastPart(tr.Text(fn)); (l == "deepcopy" || l == "copy") && args >= 0 {
			// copy.deepcopy(x) is a copy of x.
			if cs := tr.CodeChildren(args); len(cs) == 1 {
				if f, err := n.eval(fn, scope, off); err != nil || f.kind == entExternal {
					return n.exprAnn(cs[0], scope, off, depth+1)
				}
			}
		}
		if tr.Kind(fn) == syntax.KindIdentifier && args >= 0 && n.lookup(tr.Text(fn), scope, off) < 0 {
			// list(xs), sorted(xs): a list of what xs holds.
			switch name := tr.Text(fn); name {
			case "next":
				// next(it[, default]): an item of it.
				if cs := tr.CodeChildren(args); len(cs) >= 1 {
					if el := n.iterElement(cs[0], scope, off, depth+1); el != nil {
						return el, true
					}
				}
				return nil, false
			case "dict":
				// dict(m): a mapping of the same types.
				if cs := tr.CodeChildren(args); len(cs) == 1 {
					return n.exprAnn(cs[0], scope, off, depth+1)
				}
				return nil, false
			case "list", "tuple", "set", "sorted", "reversed", "iter", "frozenset":
				if cs := tr.CodeChildren(args); len(cs) >= 1 {
					if el := n.iterElement(cs[0], scope, off, depth+1); el != nil {
						if name == "tuple" {
							return &ann{name: "tuple", args: []*ann{el, {name: "..."}}}, true
						}
						return &ann{name: "list", args: []*ann{el}}, true
					}
				}
				return nil, false
			}
		}
		f, err := n.eval(fn, scope, off)
		if err != nil {
			return nil, false
		}
		return n.callAnn(f, depth+1)
	case syntax.KindSubscript:
		base, ok := n.exprAnn(tr.Child(x, syntax.FieldValue), scope, off, depth+1)
		if !ok {
			return nil, false
		}
		el := n.element(base, false, n.constIndex(tr.Child(x, syntax.FieldSubscript)), depth+1)
		return el, el != nil
	case syntax.KindNamedExpression:
		return n.exprAnn(tr.Child(x, syntax.FieldValue), scope, off, depth+1)
	case syntax.KindBinaryOperator, syntax.KindComparisonOperator:
		return n.operatorAnn(x, scope, off, depth+1)
	case syntax.KindBooleanOperator:
		// a or b: either one.
		u := &ann{name: "Union"}
		for _, c := range []int32{tr.Child(x, syntax.FieldLeft), tr.Child(x, syntax.FieldRight)} {
			if a, ok := n.exprAnn(c, scope, off, depth+1); ok {
				u.args = append(u.args, a)
			}
		}
		return u, len(u.args) > 0
	case syntax.KindTuple, syntax.KindExpressionList, syntax.KindList, syntax.KindSet:
		// (a, b): each item's type in its place; [a, b]: any of them.
		items := &ann{name: "tuple"}
		for i, c := range tr.CodeChildren(x) {
			if i >= maxAnnNodes {
				break
			}
			a, ok := n.exprAnn(c, scope, off, depth+1)
			if !ok {
				a = &ann{}
			}
			items.args = append(items.args, a)
		}
		if k := tr.Kind(x); k == syntax.KindList || k == syntax.KindSet {
			return &ann{name: "list", args: []*ann{{name: "Union", args: items.args}}}, len(items.args) > 0
		}
		return items, len(items.args) > 0
	case syntax.KindConditionalExpression:
		cs := tr.CodeChildren(x)
		if len(cs) < 2 {
			return nil, false
		}
		u := &ann{name: "Union"}
		for _, c := range []int32{cs[0], cs[len(cs)-1]} {
			if a, ok := n.exprAnn(c, scope, off, depth+1); ok {
				u.args = append(u.args, a)
			}
		}
		return u, len(u.args) > 0
	}
	return nil, false
}

// callAnn is the declared type of a call of f: an instance of a class, a
// function's return annotation; for a union, each one's.
func (n *navigator) callAnn(f entity, depth int) (*ann, bool) {
	u := &ann{name: "Union"}
	for _, x := range append([]entity{f}, f.alts...) {
		x.alts = nil
		x, err := n.deref(x)
		if err != nil {
			continue
		}
		switch x.kind {
		case entClass:
			x.kind, x.alts = entInstance, nil
			u.args = append(u.args, &ann{ents: []entity{x}})
		case entFunction:
			if r, ok := n.returnAnn(x); ok {
				u.args = append(u.args, r)
			}
		}
	}
	switch len(u.args) {
	case 0:
		return nil, false
	case 1:
		return u.args[0], true
	}
	return u, true
}

// entityAnn is what value e is, as an annotation.
func (n *navigator) entityAnn(e entity, depth int) (*ann, bool) {
	switch e.kind {
	case entInstance, entClass:
		return &ann{ents: append([]entity{e}, e.alts...)}, true
	case entOpaque:
		if d, err := n.deref(e); err == nil && (d.kind == entInstance || d.kind == entClass) {
			return &ann{ents: append([]entity{d}, d.alts...)}, true
		}
		return n.declared(e, depth)
	case entFunction:
		// x.prop read as a value: what the getter returns.
		if g, ok := n.propertyGetter(e); ok {
			return n.returnAnn(g)
		}
	}
	return nil, false
}

// constIndex is the integer a subscript is, or -1.
func (n *navigator) constIndex(x int32) int {
	if x < 0 {
		return -1
	}
	s := strings.ReplaceAll(n.tree.Text(x), " ", "")
	if i, err := strconv.Atoi(s); err == nil {
		return i
	}
	return -1 << 30
}

// element is what an item of a value of type a is: iterating over it
// (iter), or subscripting it with index i (-1 << 30 for no constant).
func (n *navigator) element(a *ann, iter bool, i, depth int) *ann {
	if a == nil || depth > maxAnnDepth {
		return nil
	}
	last := lastPart(a.name)
	switch {
	case unionNames[last]:
		u := &ann{name: "Union"}
		for _, x := range a.args {
			if el := n.element(x, iter, i, depth+1); el != nil {
				u.args = append(u.args, el)
			}
		}
		if len(u.args) == 0 {
			return nil
		}
		return u
	case wrapperNames[last] && len(a.args) > 0:
		return n.element(a.args[0], iter, i, depth+1)
	case sequenceNames[last] && len(a.args) > 0:
		return a.args[0]
	case mappingNames[last] && len(a.args) == 2:
		if iter {
			return a.args[0]
		}
		return a.args[1]
	case tupleNames[last] && len(a.args) > 0:
		if len(a.args) == 2 && a.args[1].name == "..." {
			return a.args[0]
		}
		if !iter && i < 0 && i >= -len(a.args) {
			i += len(a.args)
		}
		if !iter && i >= 0 && i < len(a.args) {
			return a.args[i]
		}
		return &ann{name: "Union", args: a.args}
	case a.ents == nil && !opaqueNames[last] && !a.call:
		// An alias of a container (Foos = List[Foo]).
		if e, err := n.annName(a); err == nil {
			if v, ok := n.aliasOf(e); ok {
				return n.element(v, iter, i, depth+1)
			}
		}
	}
	// An instance of a class: what its __getitem__ returns, or the
	// items of the iterator its __iter__ returns.
	dunder := "__getitem__"
	if iter {
		dunder = "__iter__"
	}
	for _, inst := range n.instances(a, depth+1) {
		if inst.kind != entInstance {
			continue
		}
		m, err := n.attr(inst, dunder)
		if err != nil || m.kind != entFunction {
			continue
		}
		if r, ok := n.returnAnn(m); ok {
			if iter {
				return n.element(r, true, 0, depth+1)
			}
			return r
		}
	}
	return nil
}

// forAnn is the declared type of a for target: the element of what the
// loop walks, through enumerate, zip, dict views and copies.
func (n *navigator) forAnn(bd *pyscope.Binding, depth int) (*ann, bool) {
	tr := n.tree
	left, right := tr.Child(bd.Stmt, syntax.FieldLeft), tr.Child(bd.Stmt, syntax.FieldRight)
	if left < 0 || right < 0 {
		return nil, false
	}
	path, ok := n.targetPath(bd.Node, left)
	if !ok {
		return nil, false
	}
	scope := n.occScope(bd.Node, bd.Scope)
	off := uint32(tr.Start(bd.Stmt))
	el := n.iterElement(right, scope, off, depth+1)
	for _, k := range path {
		if el == nil {
			return nil, false
		}
		el = n.element(el, false, k, depth+1)
	}
	return el, el != nil
}

// targetPath is the place of identifier id in target left: for i, (a, b)
// in ... puts b at [1 1].
func (n *navigator) targetPath(id, left int32) ([]int, bool) {
	tr := n.tree
	var path []int
	for x := id; x != left; {
		p := tr.Parent(x)
		if p < 0 || len(path) > maxAnnDepth {
			return nil, false
		}
		switch tr.Kind(p) {
		case syntax.KindParenthesizedExpression:
			// (x) is x
		case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindListPattern, syntax.KindTuple,
			syntax.KindList, syntax.KindExpressionList:
			k := 0
			for c := range tr.Children(p) {
				if c == x {
					break
				}
				if tr.Kind(c) != syntax.KindComment {
					k++
				}
			}
			path = append([]int{k}, path...)
		default:
			return nil, false // a starred name, an attribute
		}
		x = p
	}
	return path, true
}

// unpackAnn is the declared type of a name unpacked from a typed tuple:
// a, b = f() with f() -> Tuple[A, B].
func (n *navigator) unpackAnn(bd *pyscope.Binding, depth int) (*ann, bool) {
	tr := n.tree
	asg := tr.Parent(bd.Node)
	for asg >= 0 && tr.Kind(asg) != syntax.KindAssignment {
		asg = tr.Parent(asg)
	}
	if asg < 0 {
		return nil, false
	}
	left, right := tr.Child(asg, syntax.FieldLeft), tr.Child(asg, syntax.FieldRight)
	if left < 0 || right < 0 || tr.Kind(right) == syntax.KindAssignment {
		return nil, false
	}
	path, ok := n.targetPath(bd.Node, left)
	if !ok || len(path) == 0 {
		return nil, false
	}
	el, ok := n.exprAnn(right, bd.Scope, uint32(tr.Start(asg)), depth+1)
	for _, k := range path {
		if !ok || el == nil {
			return nil, false
		}
		el = n.element(el, false, k, depth+1)
	}
	return el, el != nil
}

// iterElement is what iterating over x gives.
func (n *navigator) iterElement(x, scope int32, off uint32, depth int) *ann {
	if depth > maxAnnDepth {
		return nil
	}
	tr := n.tree
	x = tr.Unwrap(x)
	if tr.Kind(x) == syntax.KindCall {
		fn, args := tr.Child(x, syntax.FieldFunction), tr.Child(x, syntax.FieldArguments)
		var argv []int32
		if args >= 0 {
			argv = tr.CodeChildren(args)
		}
		switch {
		case tr.Kind(fn) == syntax.KindIdentifier && n.lookup(tr.Text(fn), scope, off) < 0:
			switch tr.Text(fn) {
			case "enumerate":
				if len(argv) >= 1 {
					if el := n.iterElement(argv[0], scope, off, depth+1); el != nil {
						return &ann{name: "tuple", args: []*ann{{name: "int"}, el}}
					}
				}
				return nil
			case "zip":
				t := &ann{name: "tuple"}
				for _, a := range argv {
					el := n.iterElement(a, scope, off, depth+1)
					if el == nil {
						el = &ann{}
					}
					t.args = append(t.args, el)
				}
				return t
			case "reversed", "sorted", "list", "tuple", "set", "iter", "frozenset":
				if len(argv) >= 1 {
					return n.iterElement(argv[0], scope, off, depth+1)
				}
				return nil
			}
		case tr.Kind(fn) == syntax.KindAttribute && len(argv) == 0:
			view := tr.Text(tr.Child(fn, syntax.FieldAttribute))
			if view == "items" || view == "values" || view == "keys" {
				d, ok := n.exprAnn(tr.Child(fn, syntax.FieldObject), scope, off, depth+1)
				if !ok {
					break
				}
				k, v := n.element(d, true, 0, depth+1), n.element(d, false, -1<<30, depth+1)
				switch view {
				case "keys":
					return k
				case "values":
					return v
				}
				if k == nil {
					k = &ann{}
				}
				if v == nil {
					v = &ann{}
				}
				return &ann{name: "tuple", args: []*ann{k, v}}
			}
		}
	}
	a, ok := n.exprAnn(x, scope, off, depth+1)
	if !ok {
		return nil
	}
	return n.element(a, true, 0, depth+1)
}

// binaryDunders are the methods a binary operator calls on its left
// operand, and on its right one when the left has none.
var binaryDunders = map[string][2]string{
	"+": {"__add__", "__radd__"}, "-": {"__sub__", "__rsub__"}, "*": {"__mul__", "__rmul__"},
	"/": {"__truediv__", "__rtruediv__"}, "//": {"__floordiv__", "__rfloordiv__"}, "%": {"__mod__", "__rmod__"},
	"**": {"__pow__", "__rpow__"}, "@": {"__matmul__", "__rmatmul__"}, "&": {"__and__", "__rand__"},
	"|": {"__or__", "__ror__"}, "^": {"__xor__", "__rxor__"}, "<<": {"__lshift__", "__rlshift__"},
	">>": {"__rshift__", "__rrshift__"},
	"==": {"__eq__", "__eq__"}, "!=": {"__ne__", "__ne__"}, "<": {"__lt__", "__gt__"}, "<=": {"__le__", "__ge__"},
	">": {"__gt__", "__lt__"}, ">=": {"__ge__", "__le__"},
}

// operatorAnn is the declared type of a binary operation: what the
// operand's method for it returns (Tensor.__mul__ -> Tensor).
func (n *navigator) operatorAnn(x, scope int32, off uint32, depth int) (*ann, bool) {
	tr := n.tree
	left, right := tr.Child(x, syntax.FieldLeft), tr.Child(x, syntax.FieldRight)
	if tr.Kind(x) == syntax.KindComparisonOperator {
		// a < b: one comparison of two operands (a chain is a bool).
		if cs := tr.CodeChildren(x); len(cs) == 2 {
			left, right = cs[0], cs[1]
		}
	}
	if left < 0 || right < 0 || tr.End(left) > tr.Start(right) {
		return nil, false
	}
	dunders, ok := binaryDunders[strings.TrimSpace(string(tr.Src()[tr.End(left):tr.Start(right)]))]
	if !ok {
		return nil, false
	}
	for i, operand := range []int32{left, right} {
		a, ok := n.exprAnn(operand, scope, off, depth+1)
		if !ok {
			continue
		}
		for _, inst := range n.instances(a, depth+1) {
			if inst.kind != entInstance {
				continue
			}
			m, err := n.attr(inst, dunders[i])
			if err != nil || m.kind != entFunction {
				continue
			}
			if r, ok := n.returnAnn(m); ok {
				return r, true
			}
		}
	}
	return nil, false
}

// narrowed is what isinstance says a name read at x is, where its value
// shows nothing: inside "if isinstance(x, C):", after "assert
// isinstance(x, C)", after "if not isinstance(x, C): raise" or "while
// not isinstance(x, C): ..." (pyright's narrowing, in its common forms).
// The nearest such test before the read decides.
func (n *navigator) narrowed(x, scope int32, off uint32) []entity {
	tr := n.tree
	name := tr.Text(x)
	fnode := n.tab.Scope(scope).Node
	if n.r.count() != nil {
		return nil
	}
	steps := 0
	for child, p := x, tr.Parent(x); p >= 0 && child != fnode; child, p = p, tr.Parent(p) {
		switch tr.Kind(p) {
		case syntax.KindBooleanOperator:
			// isinstance(x, C) and x.attr
			if tr.Field(child) == syntax.FieldRight && n.boolOp(p) == "and" {
				if c := n.isinstanceOf(tr.Child(p, syntax.FieldLeft), name, false); c >= 0 {
					return n.narrowTo(c, scope, off)
				}
			}
		case syntax.KindIfStatement, syntax.KindElifClause:
			// Inside the consequence of if (elif) isinstance(x, C).
			if tr.Field(child) == syntax.FieldConsequence {
				if c := n.isinstanceOf(tr.Child(p, syntax.FieldCondition), name, false); c >= 0 {
					return n.narrowTo(c, scope, off)
				}
			}
			// In an elif or else after "if not isinstance(x, C):".
			if k := tr.Kind(child); tr.Kind(p) == syntax.KindIfStatement && (k == syntax.KindElifClause || k == syntax.KindElseClause) {
				if c := n.isinstanceOf(tr.Child(p, syntax.FieldCondition), name, true); c >= 0 {
					return n.narrowTo(c, scope, off)
				}
				for e := range tr.Children(p) {
					if e == child || steps > maxNarrowStatements {
						break
					}
					steps++
					if tr.Kind(e) == syntax.KindElifClause {
						if c := n.isinstanceOf(tr.Child(e, syntax.FieldCondition), name, true); c >= 0 {
							return n.narrowTo(c, scope, off)
						}
					}
				}
			}
		case syntax.KindBlock, syntax.KindModule:
			// The statements before the one holding the read.
			var before []int32
			for s := range tr.Children(p) {
				if s == child {
					break
				}
				before = append(before, s)
			}
			for i := len(before) - 1; i >= 0; i-- {
				if steps++; steps > maxNarrowStatements {
					return nil
				}
				if c := n.narrowingStatement(before[i], name); c >= 0 {
					return n.narrowTo(c, scope, off)
				}
			}
		}
	}
	return nil
}

// narrowingStatement is the class argument of statement s when it makes
// name an instance of it for the statements after: assert isinstance,
// if not isinstance(...): raise/return/continue, while not isinstance.
func (n *navigator) narrowingStatement(s int32, name string) int32 {
	tr := n.tree
	switch tr.Kind(s) {
	case syntax.KindAssertStatement:
		if cs := tr.CodeChildren(s); len(cs) > 0 {
			return n.isinstanceOf(cs[0], name, false)
		}
	case syntax.KindWhileStatement:
		return n.isinstanceOf(tr.Child(s, syntax.FieldCondition), name, true)
	case syntax.KindIfStatement:
		body := tr.Child(s, syntax.FieldConsequence)
		if body < 0 || tr.Child(s, syntax.FieldAlternative) >= 0 {
			return -1
		}
		cs := tr.CodeChildren(body)
		if len(cs) == 0 {
			return -1
		}
		switch tr.Kind(cs[len(cs)-1]) {
		case syntax.KindRaiseStatement, syntax.KindReturnStatement, syntax.KindContinueStatement:
			return n.isinstanceOf(tr.Child(s, syntax.FieldCondition), name, true)
		}
	}
	return -1
}

// isinstanceOf is C of the condition isinstance(name, C) (negated: not
// isinstance(name, C)), or of one operand of an "and" of such; -1 if
// the condition is no such test.
func (n *navigator) isinstanceOf(cond int32, name string, negated bool) int32 {
	tr := n.tree
	cond = tr.Unwrap(cond)
	if cond < 0 {
		return -1
	}
	if negated {
		if tr.Kind(cond) != syntax.KindNotOperator {
			return -1
		}
		cs := tr.CodeChildren(cond)
		if len(cs) != 1 {
			return -1
		}
		return n.isinstanceOf(cs[0], name, false)
	}
	switch tr.Kind(cond) {
	case syntax.KindBooleanOperator:
		if n.boolOp(cond) != "and" {
			return -1
		}
		for _, c := range []int32{tr.Child(cond, syntax.FieldLeft), tr.Child(cond, syntax.FieldRight)} {
			if k := n.isinstanceOf(c, name, false); k >= 0 {
				return k
			}
		}
	case syntax.KindCall:
		fn, args := tr.Child(cond, syntax.FieldFunction), tr.Child(cond, syntax.FieldArguments)
		if fn < 0 || args < 0 || tr.Text(fn) != "isinstance" {
			return -1
		}
		cs := tr.CodeChildren(args)
		if len(cs) == 2 && tr.Kind(cs[0]) == syntax.KindIdentifier && tr.Text(cs[0]) == name {
			return cs[1]
		}
	}
	return -1
}

// narrowTo is the instances of class expression c (a tuple of classes:
// each).
func (n *navigator) narrowTo(c, scope int32, off uint32) []entity {
	tr := n.tree
	c = tr.Unwrap(c)
	classes := []int32{c}
	if tr.Kind(c) == syntax.KindTuple {
		classes = tr.CodeChildren(c)
	}
	var out []entity
	for _, k := range classes {
		if !n.isChain(k) {
			continue
		}
		e, err := n.eval(k, scope, off)
		if err != nil {
			continue
		}
		if e, err = n.deref(e); err == nil && e.kind == entClass {
			e.kind, e.alts = entInstance, nil
			out = appendCandidates(out, []entity{e})
		}
	}
	return out
}

// namedtupleField is the string that names field name among the fields
// of a namedtuple('X', [...]) (or NamedTuple) that class node cls
// derives from, or -1.
func namedtupleField(tr *syntax.Tree, cls int32, name string) int32 {
	args := tr.Child(cls, syntax.FieldSuperclasses)
	if args < 0 {
		return -1
	}
	for c := range tr.Children(args) {
		if tr.Kind(c) != syntax.KindCall {
			continue
		}
		if l := lastPart(tr.Text(tr.Child(c, syntax.FieldFunction))); l != "namedtuple" && l != "NamedTuple" {
			continue
		}
		cargs := tr.Child(c, syntax.FieldArguments)
		if cargs < 0 {
			continue
		}
		cs := tr.CodeChildren(cargs)
		if len(cs) < 2 {
			continue
		}
		end := tr.End(cs[1])
		for i := cs[1]; int(i) < tr.Len() && tr.Start(i) < end; i++ {
			if tr.Kind(i) != syntax.KindString {
				continue
			}
			v, ok := tr.PlainString(i)
			if !ok {
				continue
			}
			for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' }) {
				if f == name {
					return i
				}
			}
		}
	}
	return -1
}

// tupleField is field name of a namedtuple class c derives from: a place
// in its file.
func (r *resolver) tupleField(c classRef, name string) (entity, bool) {
	if c.local >= 0 {
		tr := r.nav.tree
		s := namedtupleField(tr, r.nav.tab.Scope(c.local).Node, name)
		if s < 0 {
			return entity{}, false
		}
		pos := tr.ContentSpan(s).Start
		return entity{kind: entOpaque, node: -1, fn: -1, bind: -1, cls: classRef{local: -1},
			t: target{site: &extSite{line: int32(pos.Line), col: int32(pos.Col), name: name, kind: KindVariable}}}, true
	}
	if !strings.Contains(c.t.b.sig, "amedtuple") && !strings.Contains(c.t.b.sig, "NamedTuple(") {
		return entity{}, false
	}
	tab := r.ix.table(c.t.file)
	if tab == nil {
		return entity{}, false
	}
	cs := tab.ClassScope(int(c.t.b.line), int(c.t.b.col))
	if cs < 0 {
		return entity{}, false
	}
	tr := tab.Tree()
	s := namedtupleField(tr, tab.Scope(cs).Node, name)
	if s < 0 {
		return entity{}, false
	}
	pos := tr.ContentSpan(s).Start
	return indexEntity(target{mod: c.t.mod, site: &extSite{file: c.t.file, line: int32(pos.Line), col: int32(pos.Col), name: name, kind: KindVariable, owner: c.t.path}}), true
}

// boolOp is the operator of boolean operation x: "and" or "or".
func (n *navigator) boolOp(x int32) string {
	tr := n.tree
	l, r := tr.Child(x, syntax.FieldLeft), tr.Child(x, syntax.FieldRight)
	if l < 0 || r < 0 || tr.End(l) > tr.Start(r) {
		return ""
	}
	var op strings.Builder
	for line := range strings.SplitSeq(string(tr.Src()[tr.End(l):tr.Start(r)]), "\n") {
		op.WriteString(strings.Trim(stripComment(line), " \t\r\\()"))
	}
	return op.String()
}

// findClassPath is the class binding at dotted path among bs.
func findClassPath(bs []binding, prefix, path string) (string, *binding) {
	first, rest, _ := strings.Cut(path, ".")
	b := best(bs, first)
	if b == nil || b.kind != KindClass {
		return "", nil
	}
	if rest == "" {
		return joinName(prefix, first), b
	}
	return findClassPath(b.members, joinName(prefix, first), rest)
}
