package pyindex

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Source is a file to navigate from: a file of the index opened in an
// editor, or any other Python file (a user's buffer), with the table of
// its names (one per parse; see pyscope).
type Source struct {
	// Module is the file's dotted module name ("torch._inductor.config");
	// "" when it cannot be known, and then relative imports in it lead
	// nowhere.
	Module string
	// Package is set for an __init__ file, whose relative imports start
	// from Module itself.
	Package bool
	// Path is the file on this machine; answers inside the file name it.
	Path string
	// Rel is the file's path relative to the index's site dir when the
	// file is one of the index's ("" otherwise): answers the index gives
	// in that file are answers in the source.
	Rel string
	// Table holds the file's names; it must come from the text the
	// offsets are in.
	Table *pyscope.Table
}

// Definition is where a name of a Source is defined.
type Definition struct {
	// Symbol describes the definition. Its Path is set; File is set when
	// the place is in the index (the source's own Rel included); Kind is
	// KindParameter for a keyword argument's parameter and a parameter.
	Symbol Symbol
	// InSource is set when the place is in the source file itself.
	InSource bool
	// Chain are the hops taken through the index, as in Resolution.
	Chain []Hop
	// Also are the other definitions of a name with several: an
	// attribute of a value whose declared type is a union (as pyright
	// answers); each has no Also of its own.
	Also []Definition
}

// ErrNoName is wrapped by DefinitionAt's error when no identifier is at
// the offset.
var ErrNoName = errors.New("no name at the offset")

// maxNavSteps bounds the lookups one DefinitionAt makes, whatever the
// shape of the code (long chains, wide class hierarchies).
const maxNavSteps = 20000

// DefinitionAt finds where the identifier at byte offset off of src (or
// ending at off) is defined: a name through its scopes (Python's rules,
// pyscope), an import where it leads, an attribute through what its object
// is (a module, a class and its bases, an instance: self, cls, x = C()),
// a keyword argument as the parameter it binds. Names the text cannot
// settle (builtins, attributes of values of unknown type, names bound at
// run time) give an error wrapping ErrNotFound.
func (ix *Index) DefinitionAt(src Source, off int) (Definition, error) {
	if src.Table == nil {
		return Definition{}, fmt.Errorf("pyindex: definition in %s: no table", src.Path)
	}
	occ, ok := src.Table.OccurrenceAt(off)
	if !ok {
		return Definition{}, fmt.Errorf("pyindex: definition in %s at %d: %w", src.Path, off, ErrNoName)
	}
	n := ix.navigator(src)
	e, err := n.definition(occ)
	if err != nil {
		name := src.Table.Tree().Text(occ.Node)
		return Definition{}, fmt.Errorf("pyindex: definition of %s in %s: %w", name, src.Path, err)
	}
	d, ok := n.describe(e)
	if !ok {
		name := src.Table.Tree().Text(occ.Node)
		return Definition{}, fmt.Errorf("pyindex: definition of %s in %s: %w: no place", name, src.Path, ErrNotFound)
	}
	for _, a := range e.alts {
		if ad, ok := n.describe(a); ok && !sameDefinition(ad, d) && !slices.ContainsFunc(d.Also, func(o Definition) bool { return sameDefinition(o, ad) }) {
			ad.Chain = nil
			d.Also = append(d.Also, ad)
		}
	}
	return d, nil
}

func sameDefinition(a, b Definition) bool {
	return a.Symbol.Path == b.Symbol.Path && a.Symbol.Line == b.Symbol.Line && a.Symbol.Col == b.Symbol.Col
}

// navigator carries one navigation from a source file.
type navigator struct {
	ix   *Index
	src  Source
	tab  *pyscope.Table
	tree *syntax.Tree
	pkg  string // the package relative imports start from; "" unknown
	r    *resolver
	// inferring counts the return types being inferred through other
	// files' navigators around this one (maxInferDepth).
	inferring int
	// reexports resolves imports from modules outside the index
	// (ReferenceOptions.Reexports); nil for none.
	reexports Reexports
}

func (ix *Index) navigator(src Source) *navigator {
	n := &navigator{ix: ix, src: src, tab: src.Table}
	if src.Table != nil {
		n.tree = src.Table.Tree()
	}
	n.pkg = src.Module
	if !src.Package {
		n.pkg = parentName(src.Module)
	}
	n.r = ix.newResolver()
	n.r.nav = n
	return n
}

func parentName(dotted string) string {
	if i := strings.LastIndexByte(dotted, '.'); i >= 0 {
		return dotted[:i]
	}
	return ""
}

// classRef is a class: one of the source's (its scope in the table) or
// one the index holds.
type classRef struct {
	local int32  // class scope in the source table; -1 for the index's
	t     target // the index's class binding
}

func (c classRef) key() string {
	if c.local >= 0 {
		return fmt.Sprintf("source\x00%d", c.local)
	}
	return c.t.file.rel + "\x00" + c.t.path
}

type entKind uint8

const (
	// entOpaque is a value whose type the text does not show (yet: a
	// variable's value is looked at when an attribute of it is asked).
	entOpaque entKind = iota
	entModule
	entClass
	entInstance
	entSuper // super(): the classes after cls in the MRO
	entFunction
	entExternal // an import of a module the index does not have
)

// entity is what a name or expression is, with where it is defined.
type entity struct {
	kind entKind
	// Where it is defined: an identifier of the source (node >= 0), or
	// a place of the index (t).
	node int32
	t    target
	mod  *module  // entModule
	cls  classRef // entClass, entInstance, entSuper
	// instance is set for super() in an instance method.
	instance bool
	// fn is the def of a source function (entFunction), -1 for the
	// index's (then t).
	fn int32
	// bind is the source binding the entity is the value of, -1 for none:
	// its value is looked at for attributes and rebindings.
	bind int32
	// alts are the other things it may be: the other classes of a union
	// a value is declared with, the other definitions of an attribute of
	// such a value. Each has no alts of its own.
	alts []entity
}

func (n *navigator) errNotFound(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotFound}, args...)...)
}

// definition answers for one occurrence.
func (n *navigator) definition(occ pyscope.Occurrence) (entity, error) {
	tr := n.tree
	name := tr.Text(occ.Node)
	start := uint32(tr.Start(occ.Node))
	switch occ.Role {
	case pyscope.RoleRead, pyscope.RoleDeclared:
		b := n.lookup(name, occ.Scope, start)
		if b < 0 {
			return entity{}, n.errNotFound("%s is a builtin or bound at run time", name)
		}
		return n.bindingDefinition(b, name)
	case pyscope.RoleBind:
		bd := n.tab.Binding(occ.Binding)
		if bd.Kind == pyscope.BindImport || bd.Kind == pyscope.BindImportFrom {
			return n.importDefinition(occ.Binding, name)
		}
		return n.sourceEntity(occ.Node, occ.Binding), nil
	case pyscope.RoleImported:
		return n.importDefinition(occ.Binding, name)
	case pyscope.RoleModule:
		mod, ok := n.modulePath(occ.Node)
		m := n.ix.modules[mod]
		if !ok || m == nil {
			return entity{}, n.errNotFound("module %q is not in the index", mod)
		}
		return n.moduleEntity(m), nil
	case pyscope.RoleAttribute:
		a := tr.Parent(occ.Node)
		obj := tr.Child(a, syntax.FieldObject)
		if obj < 0 {
			// Error recovery can leave an attribute with no object
			// (case A(b=\x81x.y)): nothing to look the name up on.
			return entity{}, n.errNotFound("%s has no object to look it up on", name)
		}
		base, err := n.eval(obj, occ.Scope, uint32(tr.Start(obj)))
		if err != nil {
			return entity{}, err
		}
		e, err := n.attr(base, name)
		if err != nil {
			return entity{}, err
		}
		alts := e.alts
		e.alts = nil
		if e, err = n.rebound(e); err != nil {
			return entity{}, err
		}
		for _, a := range alts {
			if a, err := n.rebound(a); err == nil {
				e.alts = append(e.alts, a)
			}
		}
		return e, nil
	case pyscope.RoleKeyword:
		kw := tr.Parent(occ.Node)
		call := tr.Parent(tr.Parent(kw))
		fn := tr.Child(call, syntax.FieldFunction)
		callee, err := n.eval(fn, occ.Scope, uint32(tr.Start(fn)))
		if err != nil {
			return entity{}, err
		}
		return n.parameter(callee, name)
	}
	return entity{}, n.errNotFound("%s names nothing", name)
}

// sourceEntity is a binding of the source as a definition.
func (n *navigator) sourceEntity(node, bind int32) entity {
	return entity{kind: entOpaque, node: node, fn: -1, bind: bind, cls: classRef{local: -1}}
}

func (n *navigator) moduleEntity(m *module) entity {
	return entity{kind: entModule, node: -1, t: target{mod: m}, mod: m, fn: -1, bind: -1, cls: classRef{local: -1}}
}

func (n *navigator) externalEntity(node int32) entity {
	return entity{kind: entExternal, node: node, fn: -1, bind: -1, cls: classRef{local: -1}}
}

// bindingDefinition is where a name read lands: its binding, or where
// the binding's import leads.
func (n *navigator) bindingDefinition(b int32, name string) (entity, error) {
	switch n.tab.Binding(b).Kind {
	case pyscope.BindImport, pyscope.BindImportFrom, pyscope.BindStar:
		e, err := n.bindingEntity(b, name)
		if err != nil || e.kind == entExternal {
			return e, err
		}
		return n.rebound(e)
	}
	return n.sourceEntity(n.tab.Binding(b).Node, b), nil
}

// importDefinition is where an import's name or alias leads; an import
// of something the index lacks has no answer.
func (n *navigator) importDefinition(b int32, name string) (entity, error) {
	e, err := n.bindingEntity(b, name)
	if err != nil {
		return entity{}, err
	}
	if e.kind == entExternal {
		return entity{}, n.errNotFound("%s is imported from outside the index", name)
	}
	return n.rebound(e)
}

// reexported is what `from module import name` binds when module is
// outside the index: the index's definition a user's module re-exports
// (n.reexports), or an external entity.
func (n *navigator) reexported(module string, bd *pyscope.Binding) entity {
	if n.reexports == nil || module == "" {
		return n.externalEntity(bd.Node)
	}
	qual, ok := n.reexports.Reexport(module, bd.Attr)
	if !ok {
		return n.externalEntity(bd.Node)
	}
	saved := len(n.r.chain)
	t, err := n.r.resolve(qual)
	if err != nil {
		n.r.chain = n.r.chain[:saved]
		return n.externalEntity(bd.Node)
	}
	return indexEntity(t)
}

// lookup finds the binding name refers to, star imports included.
func (n *navigator) lookup(name string, scope int32, off uint32) int32 {
	res := n.tab.Lookup(name, scope, off, func(star *pyscope.Binding, name string) bool {
		// A star import binds what its module exports and has: a public
		// name the module lacks (a builtin's) is not bound by it.
		m := n.ix.modules[n.absolute(star.Module, star.Level)]
		if m == nil || !n.ix.exports(m, name) {
			return false
		}
		saved := len(n.r.chain)
		_, err := n.r.moduleAttr(m, name)
		n.r.chain = n.r.chain[:saved]
		return err == nil
	})
	return res.Binding
}

// absolute turns the module of an import into an absolute dotted name;
// "" when relative dots climb above what the source's name tells.
func (n *navigator) absolute(module string, level int) string {
	if level == 0 {
		return module
	}
	base := n.pkg
	for i := 1; i < level; i++ {
		base = parentName(base)
	}
	if base == "" || module == "" {
		return base
	}
	return base + "." + module
}

// modulePath is the module named by the import statement's dotted name
// up to and including identifier id.
func (n *navigator) modulePath(id int32) (string, bool) {
	tr := n.tree
	d := tr.Parent(id)
	if tr.Kind(d) != syntax.KindDottedName {
		return "", false
	}
	var parts []string
	for c := tr.FirstChild(d); c >= 0; c = tr.NextSibling(c) {
		if tr.Kind(c) != syntax.KindIdentifier {
			continue
		}
		parts = append(parts, tr.Text(c))
		if c == id {
			break
		}
	}
	path := strings.Join(parts, ".")
	if rel := tr.Parent(d); tr.Kind(rel) == syntax.KindRelativeImport {
		level := 0
		if p := tr.ChildOfKind(rel, syntax.KindImportPrefix); p >= 0 {
			level = strings.Count(tr.Text(p), ".")
		}
		path = n.absolute(path, level)
	}
	return path, path != ""
}

// bindingEntity is what a binding of the source gives name: imports are
// followed into the index.
func (n *navigator) bindingEntity(b int32, name string) (entity, error) {
	if err := n.r.count(); err != nil {
		return entity{}, err
	}
	bd := n.tab.Binding(b)
	switch bd.Kind {
	case pyscope.BindImport:
		mod := bd.Module
		if !bd.Alias {
			mod, _, _ = strings.Cut(mod, ".")
		}
		if m := n.ix.modules[mod]; m != nil {
			return n.moduleEntity(m), nil
		}
		return n.externalEntity(bd.Node), nil
	case pyscope.BindImportFrom:
		abs := n.absolute(bd.Module, bd.Level)
		m := n.ix.modules[abs]
		if m == nil {
			return n.reexported(abs, bd), nil
		}
		t, err := n.r.importFrom(m, bd.Attr)
		if errors.Is(err, errCycle) {
			return entity{}, err
		}
		if err != nil {
			return n.externalEntity(bd.Node), nil
		}
		return indexEntity(t), nil
	case pyscope.BindStar:
		m := n.ix.modules[n.absolute(bd.Module, bd.Level)]
		if m == nil {
			return entity{}, n.errNotFound("star import of a module outside the index")
		}
		t, err := n.r.moduleAttr(m, name)
		if err != nil {
			return entity{}, err
		}
		return indexEntity(t), nil
	case pyscope.BindDef:
		e := n.sourceEntity(bd.Node, b)
		e.kind, e.fn = entFunction, bd.Stmt
		return e, nil
	case pyscope.BindClass:
		e := n.sourceEntity(bd.Node, b)
		e.kind, e.cls = entClass, classRef{local: n.tab.ScopeOf(bd.Stmt)}
		return e, nil
	case pyscope.BindParam:
		sc := n.tab.Scope(bd.Scope)
		if sc.Self == b && sc.Parent >= 0 && n.tab.Scope(sc.Parent).Kind == pyscope.ScopeClass {
			e := n.sourceEntity(bd.Node, b)
			e.cls = classRef{local: sc.Parent}
			e.kind = entClass
			if sc.Method == pyscope.InstanceMethod {
				e.kind = entInstance
			}
			return e, nil
		}
	}
	return n.sourceEntity(bd.Node, b), nil
}

// eval is what expression x, read in scope at offset off, is.
func (n *navigator) eval(x, scope int32, off uint32) (entity, error) {
	if err := n.r.count(); err != nil {
		return entity{}, err
	}
	tr := n.tree
	x = tr.Unwrap(x)
	switch tr.Kind(x) {
	case syntax.KindIdentifier:
		name := tr.Text(x)
		b := n.lookup(name, scope, off)
		if b < 0 {
			return entity{}, n.errNotFound("%s is a builtin or bound at run time", name)
		}
		e, err := n.bindingEntity(b, name)
		if err != nil || e.kind != entOpaque || e.bind < 0 || n.tab.Scope(scope).Kind == pyscope.ScopeModule || n.tab.Scope(scope).Kind == pyscope.ScopeClass {
			return e, err
		}
		// isinstance(x, C) before the read says more than x's declaration.
		if ents := n.narrowed(x, scope, off); len(ents) > 0 {
			return candidates(e, ents), nil
		}
		return e, nil
	case syntax.KindAttribute:
		obj, attr := tr.Child(x, syntax.FieldObject), tr.Child(x, syntax.FieldAttribute)
		if obj < 0 || attr < 0 {
			return entity{}, n.errNotFound("half an attribute")
		}
		base, err := n.eval(obj, scope, off)
		if err != nil {
			return entity{}, err
		}
		e, err := n.attr(base, tr.Text(attr))
		if err != nil {
			return entity{}, err
		}
		return n.rebound(e)
	case syntax.KindCall:
		fn, args := tr.Child(x, syntax.FieldFunction), tr.Child(x, syntax.FieldArguments)
		if tr.Kind(fn) == syntax.KindIdentifier && tr.Text(fn) == "super" {
			switch cs := tr.CodeChildren(args); {
			case len(cs) == 0:
				return n.super(scope)
			case len(cs) == 2 && tr.Kind(cs[0]) == syntax.KindIdentifier:
				// super(C, self) in a method of C is super().
				if e, err := n.super(scope); err == nil && n.tab.Scope(e.cls.local).Name == tr.Text(cs[0]) {
					return e, nil
				}
			}
		}
		f, err := n.eval(fn, scope, off)
		if err != nil {
			return entity{}, err
		}
		if f, err = n.deref(f); err != nil {
			return entity{}, err
		}
		if f.kind == entClass {
			f.kind = entInstance
			f.alts = nil
			return f, nil
		}
		if f.kind == entFunction {
			// def f() -> Foo: f() is a Foo.
			if a, ok := n.returnAnn(f); ok {
				if ents := n.instances(a, 0); len(ents) > 0 {
					return candidates(n.sourceEntity(-1, -1), ents), nil
				}
			}
		}
		return entity{}, n.errNotFound("the value of a call")
	case syntax.KindNamedExpression:
		if id := tr.Child(x, syntax.FieldName); id >= 0 {
			if o, ok := n.tab.OccurrenceOf(id); ok && o.Binding >= 0 {
				return n.deref(n.sourceEntity(id, o.Binding))
			}
		}
	case syntax.KindSubscript, syntax.KindConditionalExpression, syntax.KindBinaryOperator, syntax.KindComparisonOperator, syntax.KindBooleanOperator:
		if a, ok := n.exprAnn(x, scope, off, 0); ok {
			if ents := n.instances(a, 0); len(ents) > 0 {
				return candidates(n.sourceEntity(-1, -1), ents), nil
			}
		}
	}
	return entity{}, n.errNotFound("the value of a %s", tr.Kind(x))
}

// super is super() in scope: the class of the method around it.
func (n *navigator) super(scope int32) (entity, error) {
	for s := scope; s >= 0; s = n.tab.Scope(s).Parent {
		sc := n.tab.Scope(s)
		if sc.Kind == pyscope.ScopeFunction && sc.Parent >= 0 && n.tab.Scope(sc.Parent).Kind == pyscope.ScopeClass {
			e := n.sourceEntity(-1, -1)
			e.kind, e.cls, e.instance = entSuper, classRef{local: sc.Parent}, sc.Method == pyscope.InstanceMethod
			return e, nil
		}
	}
	return entity{}, n.errNotFound("super() outside a method")
}

// deref looks at the value of a variable whose type the text shows: a
// rebinding a = b.c is what b.c is, x = C(...) an instance of C.
func (n *navigator) deref(e entity) (entity, error) {
	if e.kind != entOpaque {
		return e, nil
	}
	if e.bind >= 0 {
		bd := n.tab.Binding(e.bind)
		key := fmt.Sprintf("value\x00%d", e.bind)
		if err := n.r.enter(key); err != nil {
			return entity{}, err
		}
		defer n.r.leave(key)
		if bd.Value >= 0 && (bd.Kind == pyscope.BindAssign || bd.Kind == pyscope.BindWalrus) {
			v := n.tree.Unwrap(bd.Value)
			off := uint32(n.tree.Start(bd.Node))
			switch {
			case n.tree.Kind(v) == syntax.KindCall:
				f, err := n.eval(v, n.occScope(bd.Node, bd.Scope), off)
				if errors.Is(err, errCycle) {
					return entity{}, err
				}
				if err == nil {
					return candidates(e, append([]entity{f}, f.alts...)), nil
				}
			case n.isChain(v) && !isConstantName(n.tree.Text(v)):
				d, err := n.eval(v, n.occScope(bd.Node, bd.Scope), off)
				if err != nil {
					if errors.Is(err, errCycle) {
						return entity{}, err
					}
					return n.declaredValue(e), nil
				}
				if d.kind == entOpaque && d.bind != e.bind {
					// x = self.attr: what the attribute is declared as.
					return n.deref(d)
				}
				return d, nil
			}
		}
		return n.declaredValue(e), nil
	}
	if e.t.b != nil && e.t.b.kind == KindVariable && e.t.site == nil {
		t, instance, err := n.r.value(e.t)
		if err != nil {
			if errors.Is(err, errCycle) {
				return entity{}, err
			}
			return n.declaredValue(e), nil
		}
		d := indexEntity(t)
		if instance {
			if d.kind != entClass {
				return e, nil
			}
			d.kind = entInstance
		}
		return d, nil
	}
	if e.node >= 0 || e.t.site != nil {
		return n.declaredValue(e), nil
	}
	return e, nil
}

// declaredValue is e as the instance its declared type names, e itself
// when it names none.
func (n *navigator) declaredValue(e entity) entity {
	a, ok := n.declared(e, 0)
	if !ok {
		return e
	}
	if ents := n.instances(a, 0); len(ents) > 0 {
		return candidates(e, ents)
	}
	return e
}

func (n *navigator) isChain(x int32) bool {
	return n.tree.Chain(x) != nil
}

func isConstantName(s string) bool {
	switch s {
	case "True", "False", "None", "NotImplemented", "Ellipsis", "__debug__":
		return true
	}
	return false
}

// attr is what attribute name of e is.
func (n *navigator) attr(e entity, name string) (entity, error) {
	if err := n.r.count(); err != nil {
		return entity{}, err
	}
	if len(e.alts) > 0 {
		return n.unionAttr(e, name)
	}
	switch e.kind {
	case entModule:
		t, err := n.r.moduleAttr(e.mod, name)
		if err != nil {
			return entity{}, err
		}
		return indexEntity(t), nil
	case entClass:
		return n.r.classMember(e.cls, name, false, false)
	case entInstance:
		return n.r.classMember(e.cls, name, true, false)
	case entSuper:
		return n.r.classMember(e.cls, name, e.instance, true)
	case entOpaque:
		d, err := n.deref(e)
		if err != nil {
			return entity{}, err
		}
		if d.kind != entOpaque {
			return n.attr(d, name)
		}
		return entity{}, n.errNotFound("%s is an attribute of a value of unknown type", name)
	case entExternal:
		return entity{}, n.errNotFound("%s is an attribute of a module outside the index", name)
	case entFunction:
		if g, ok := n.propertyGetter(e); ok {
			// x.prop.name: what the property returns.
			if a, ok := n.returnAnn(g); ok {
				if ents := n.instances(a, 0); len(ents) > 0 {
					return n.attr(candidates(e, ents), name)
				}
			}
		}
	}
	return entity{}, n.errNotFound("%s is an attribute of a function", name)
}

// unionAttr is attribute name of every thing e may be: the first found is
// the answer, the others its alternatives.
func (n *navigator) unionAttr(e entity, name string) (entity, error) {
	var found []entity
	var first error
	for _, x := range append([]entity{e}, e.alts...) {
		x.alts = nil
		a, err := n.attr(x, name)
		if errors.Is(err, errCycle) {
			return entity{}, err
		}
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		found = appendCandidates(found, append([]entity{a}, a.alts...))
	}
	if len(found) == 0 {
		return entity{}, first
	}
	for i := range found {
		found[i].alts = nil
	}
	out := found[0]
	if len(found) > 1 {
		out.alts = found[1:]
	}
	return out, nil
}

// rebound follows plain rebindings a = b.c from a definition reached as
// an attribute or through an import to the object they name, as
// resolver.rebound does for the index.
func (n *navigator) rebound(e entity) (entity, error) {
	for range maxDepth {
		switch {
		case e.bind >= 0:
			bd := n.tab.Binding(e.bind)
			if bd.Kind != pyscope.BindAssign || bd.Value < 0 {
				return e, nil
			}
			if sk := n.tab.Scope(bd.Scope).Kind; sk != pyscope.ScopeModule && sk != pyscope.ScopeClass {
				return e, nil
			}
			v := n.tree.Unwrap(bd.Value)
			if !n.isChain(v) || isConstantName(n.tree.Text(v)) {
				return e, nil
			}
			d, err := n.deref(e)
			if err != nil {
				return entity{}, err
			}
			if d.kind == entExternal || (d.node == e.node && d.t == e.t) || n.inStub(d) && !n.sourceIsStub() {
				return e, nil
			}
			e = d
		case e.t.b != nil && e.t.site == nil:
			t := n.r.rebound(e.t)
			if t == e.t {
				return e, nil
			}
			e = indexEntity(t)
		default:
			return e, nil
		}
	}
	return e, nil
}

// inStub reports whether e is defined in a .pyi file.
func (n *navigator) inStub(e entity) bool {
	if e.node >= 0 {
		return n.sourceIsStub()
	}
	f := e.t.file
	if e.t.site != nil {
		f = e.t.site.file
	}
	if f == nil && e.t.mod != nil {
		f = e.t.mod.py
		if f == nil {
			f = e.t.mod.pyi
		}
	}
	return f != nil && f.stub
}

func (n *navigator) sourceIsStub() bool { return strings.HasSuffix(n.src.Path, ".pyi") }

// parameter is the parameter called name of what callee is: a function,
// or a class's __init__.
func (n *navigator) parameter(callee entity, name string) (entity, error) {
	callee, err := n.deref(callee)
	if err != nil {
		return entity{}, err
	}
	if callee.kind == entClass {
		if callee, err = n.r.classMember(callee.cls, "__init__", false, false); err != nil {
			return entity{}, err
		}
	}
	if callee, err = n.rebound(callee); err != nil {
		return entity{}, err
	}
	if callee.kind != entFunction {
		return entity{}, n.errNotFound("the callee of %s= is not a function the text shows", name)
	}
	if callee.fn >= 0 {
		params := n.tree.Child(callee.fn, syntax.FieldParameters)
		for _, p := range keywordParams(n.tree, params) {
			if p.Name == name {
				e := n.sourceEntity(n.paramNode(params, p), -1)
				return e, nil
			}
		}
		return entity{}, n.errNotFound("no parameter %s", name)
	}
	t := callee.t
	p, ok, err := n.ix.Parameter(n.ix.abs(t.file), int(t.b.line), name)
	if err != nil || !ok {
		return entity{}, n.errNotFound("no parameter %s of %s.%s", name, t.mod.name, t.path)
	}
	e := indexEntity(target{mod: t.mod, site: &extSite{file: t.file, line: int32(p.Line), col: int32(p.Col), name: p.Name, kind: KindParameter, text: p.Text}})
	return e, nil
}

// paramNode is the identifier of parameter p in params.
func (n *navigator) paramNode(params int32, p Param) int32 {
	end := n.tree.End(params)
	for i := params; int(i) < n.tree.Len() && n.tree.Start(i) < end; i++ {
		if n.tree.Kind(i) == syntax.KindIdentifier && n.tree.StartPos(i) == (syntax.Pos{Line: p.Line, Col: p.Col}) {
			return i
		}
	}
	return -1
}

// localBases evaluates the bases of a class of the source, in the scope
// around it.
func (n *navigator) localBases(scope int32) []classRef {
	sc := n.tab.Scope(scope)
	args := n.tree.Child(sc.Node, syntax.FieldSuperclasses)
	if args < 0 {
		return nil
	}
	off := uint32(n.tree.Start(sc.Node))
	var out []classRef
	for c := n.tree.FirstChild(args); c >= 0; c = n.tree.NextSibling(c) {
		x := c
		if n.tree.Kind(x) == syntax.KindSubscript {
			x = n.tree.Child(x, syntax.FieldValue)
		}
		if !n.isChain(x) || n.tree.Text(x) == "object" {
			continue
		}
		e, err := n.eval(x, sc.Parent, off)
		if err != nil {
			continue
		}
		if e, err = n.deref(e); err == nil && e.kind == entClass {
			out = append(out, e.cls)
		}
	}
	return out
}

// localMember finds name in the body of a class of the source (its
// instance attributes too, for an instance).
func (n *navigator) localMember(scope int32, name string, instance bool) (entity, bool, error) {
	best := int32(-1)
	for _, b := range n.tab.Names(scope, name) {
		bd := n.tab.Binding(b)
		switch bd.Kind {
		case pyscope.BindDef, pyscope.BindClass, pyscope.BindAssign, pyscope.BindImport, pyscope.BindImportFrom:
		default:
			continue
		}
		if best < 0 {
			best = b
			continue
		}
		cur := n.tab.Binding(best)
		if cur.TypeChecking && !bd.TypeChecking || cur.TypeChecking == bd.TypeChecking && n.tree.Start(bd.Node) > n.tree.Start(cur.Node) {
			best = b
		}
	}
	if best >= 0 {
		e, err := n.bindingEntity(best, name)
		return e, err == nil, err
	}
	if instance {
		if a := n.tab.InstanceAttr(scope, name); a >= 0 {
			return n.sourceEntity(a, -1), true, nil
		}
	}
	return entity{}, false, nil
}

// describe turns an entity into the Definition callers see; ok is false
// for an entity that stands nowhere.
func (n *navigator) describe(e entity) (Definition, bool) { return n.describeWith(e, true) }

// describeWith is describe; withDoc reads the full docstring of a
// definition in another file from that file.
func (n *navigator) describeWith(e entity, withDoc bool) (Definition, bool) {
	if e.node >= 0 {
		return Definition{Symbol: n.sourceSymbol(e.node, e.bind), InSource: true, Chain: n.r.chain}, true
	}
	if e.t.mod == nil && e.t.site == nil {
		return Definition{}, false
	}
	if s := e.t.site; s != nil && s.file == nil { // a place in the source without an identifier
		sym := Symbol{Kind: s.kind, Name: s.name, Qualname: joinName(n.src.Module, s.name), Module: n.src.Module,
			File: n.src.Rel, Path: n.src.Path, Line: int(s.line), Col: int(s.col), EndLine: int(s.line)}
		return Definition{Symbol: sym, InSource: true, Chain: n.r.chain}, true
	}
	sym := n.ix.symbolOf(e.t, withDoc)
	if sym.Path == "" {
		return Definition{}, false // a namespace package: no file
	}
	d := Definition{Symbol: sym, Chain: n.r.chain}
	if sym.File != "" && sym.File == n.src.Rel {
		d.Symbol.Path, d.InSource = n.src.Path, true
	}
	return d, true
}

// ModuleName is the dotted name of the module the Python file at path
// holds, read from its place under root (a site dir, or a workspace
// folder whose top-level files are importable as modules):
// root/a/b/c.py is a.b.c, root/a/b/__init__.py is the package a.b
// (isPackage set). "" when path is not under root or a part of it is no
// identifier.
func ModuleName(root, path string) (name string, isPackage bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == ".." {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	stem, ok := strings.CutSuffix(rel, ".py")
	if !ok {
		if stem, ok = strings.CutSuffix(rel, ".pyi"); !ok {
			return "", false
		}
	}
	if pkg, ok := strings.CutSuffix(stem, "/__init__"); ok {
		stem, isPackage = pkg, true
	} else if stem == "__init__" {
		return "", false // the root's own __init__ is no module of it
	}
	parts := strings.Split(stem, "/")
	for _, p := range parts {
		if !syntax.IsIdentifier(p) {
			return "", false
		}
	}
	return strings.Join(parts, "."), isPackage
}
