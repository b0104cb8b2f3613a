package pyindex

import (
	"errors"
	"fmt"
	"strings"
)

// What a class has: its members, its bases in Python's method resolution
// order (C3), the attributes its methods assign on self, and the names a
// __getattr__ serves by comparing with a literal. Classes of the index and
// of a navigated source file (navigate.go) mix in one hierarchy.

// classMember looks name up in class c and the classes of its MRO: each
// class's body, then (for an instance) the attributes its methods assign
// through self; skipFirst starts after c (super()). An instance whose
// classes lack the name but define __getattr__ comparing the name with a
// string literal finds that literal.
func (r *resolver) classMember(c classRef, name string, instance, skipFirst bool) (entity, error) {
	key := "member\x00" + c.key() + "\x00" + name
	if err := r.enter(key); err != nil {
		return entity{}, err
	}
	defer r.leave(key)
	mro, err := r.mro(c)
	if err != nil {
		return entity{}, err
	}
	if skipFirst {
		mro = mro[1:]
	}
	for i, k := range mro {
		saved := len(r.chain)
		if i > 0 && k.local < 0 {
			r.chain = append(r.chain, Hop{Kind: HopBase, Module: k.t.mod.name, Name: k.t.path, File: k.t.file.rel, Line: int(k.t.b.line), Target: k.t.mod.name + "." + k.t.path})
		}
		e, ok, err := r.member(k, name, false)
		if errors.Is(err, errCycle) {
			return entity{}, err
		}
		if ok && err == nil {
			return e, nil
		}
		if instance {
			if e, ok, err = r.member(k, name, true); errors.Is(err, errCycle) {
				return entity{}, err
			}
			if ok && err == nil {
				// self.x = ... in a method sets the attribute of a compiled
				// base that declares x (its .pyi stub: a data descriptor,
				// Tensor's requires_grad), not one of the instance.
				for _, later := range mro[i+1:] {
					if later.local < 0 && later.t.file.stub && best(later.t.b.members, name) != nil {
						if d, ok, err := r.member(later, name, false); ok && err == nil {
							return d, nil
						}
					}
				}
				return e, nil
			}
		}
		r.chain = r.chain[:saved]
	}
	for _, k := range mro {
		if e, ok := r.tupleField(k, name); ok {
			return e, nil
		}
	}
	if instance {
		for _, k := range mro {
			ga, ok, err := r.member(k, "__getattr__", false)
			if err != nil || !ok {
				continue
			}
			if e, ok := r.servedName(ga, name); ok {
				return e, nil
			}
			break
		}
	}
	return entity{}, fmt.Errorf("%w: class %s has no attribute %q known to the index", ErrNotFound, r.className(c), name)
}

func (r *resolver) className(c classRef) string {
	if c.local >= 0 && r.nav != nil {
		return r.nav.tab.Scope(c.local).Name
	}
	return c.t.mod.name + "." + c.t.path
}

// member looks name up in one class.
func (r *resolver) member(c classRef, name string, instance bool) (entity, bool, error) {
	if err := r.count(); err != nil {
		return entity{}, false, err
	}
	if c.local >= 0 {
		return r.nav.localMember(c.local, name, instance)
	}
	if m := best(c.t.b.members, name); m != nil {
		t, err := r.follow(c.t.mod, c.t.file, m, c.t.path+"."+name)
		if err != nil {
			return entity{}, false, err
		}
		return indexEntity(t), true, nil
	}
	if instance {
		if s, ok := r.ix.instanceAttr(c.t, name); ok {
			return indexEntity(target{mod: c.t.mod, site: s}), true, nil
		}
	}
	return entity{}, false, nil
}

// mro is the method resolution order of c: c, then its bases merged as
// C3 does. A hierarchy C3 cannot order, or one that goes round in a
// circle, is an error.
func (r *resolver) mro(c classRef) ([]classRef, error) {
	k := c.key()
	if got, ok := r.mros[k]; ok {
		return got, nil
	}
	key := "mro\x00" + k
	if err := r.enter(key); err != nil {
		return nil, err
	}
	defer r.leave(key)
	bases := r.bases(c)
	var seqs [][]classRef
	for _, b := range bases {
		m, err := r.mro(b)
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, append([]classRef(nil), m...))
	}
	seqs = append(seqs, append([]classRef(nil), bases...))
	out := []classRef{c}
	for {
		live := seqs[:0]
		for _, s := range seqs {
			if len(s) > 0 {
				live = append(live, s)
			}
		}
		seqs = live
		if len(seqs) == 0 {
			break
		}
		if err := r.count(); err != nil {
			return nil, err
		}
		var head classRef
		found := false
		for _, s := range seqs {
			if !inTail(seqs, s[0]) {
				head, found = s[0], true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: no consistent method resolution order for %s", ErrNotFound, r.className(c))
		}
		out = append(out, head)
		for i, s := range seqs {
			if s[0].key() == head.key() {
				seqs[i] = s[1:]
			}
		}
	}
	if r.mros == nil {
		r.mros = map[string][]classRef{}
	}
	r.mros[k] = out
	return out, nil
}

func inTail(seqs [][]classRef, c classRef) bool {
	k := c.key()
	for _, s := range seqs {
		for _, x := range s[1:] {
			if x.key() == k {
				return true
			}
		}
	}
	return false
}

// bases are the classes c derives from that the text shows, in order.
func (r *resolver) bases(c classRef) []classRef {
	if c.local >= 0 {
		return r.nav.localBases(c.local)
	}
	var out []classRef
	for _, base := range classBases(c.t.b.sig) {
		saved := len(r.chain)
		t, err := r.exprIn(c.t, base)
		if err == nil {
			t, err = r.derefClass(t)
		}
		r.chain = r.chain[:saved]
		if err == nil && t.b != nil && t.site == nil && t.b.kind == KindClass {
			out = append(out, classRef{local: -1, t: t})
		}
	}
	return out
}

// derefClass follows variables bound to a plain name (Base = other.Base)
// to what they name.
func (r *resolver) derefClass(t target) (target, error) {
	for i := 0; i < maxDepth && t.b != nil && t.site == nil && t.b.kind == KindVariable; i++ {
		nt, instance, err := r.value(t)
		if err != nil || instance {
			return t, err
		}
		t = nt
	}
	return t, nil
}

// owner is the class binding that holds t's binding, when t is a member.
func (r *resolver) owner(t target) (target, bool) {
	i := strings.LastIndexByte(t.path, '.')
	if i < 0 || t.file == nil {
		return target{}, false
	}
	bs := r.ix.load(t.file).bindings
	var b *binding
	for _, part := range strings.Split(t.path[:i], ".") {
		if b = best(bs, part); b == nil || b.kind != KindClass {
			return target{}, false
		}
		bs = b.members
	}
	return target{mod: t.mod, file: t.file, b: b, path: t.path[:i]}, true
}

// exprIn evaluates a dotted expression written beside t's binding: in the
// body of the class holding it (the bindings before it) first, then among
// its module's names.
func (r *resolver) exprIn(t target, dotted string) (target, error) {
	first, rest, _ := strings.Cut(dotted, ".")
	if o, ok := r.owner(t); ok && t.b != nil {
		var m *binding
		for i := range o.b.members {
			b := &o.b.members[i]
			if b.name == first && (b.line < t.b.line || b.line == t.b.line && b.col < t.b.col) && (m == nil || later(b, m)) {
				m = b
			}
		}
		if m != nil {
			st, err := r.follow(o.mod, o.file, m, o.path+"."+first)
			if err != nil {
				return target{}, err
			}
			if rest == "" {
				return st, nil
			}
			return r.walk(st, strings.Split(rest, "."))
		}
	}
	return r.expr(t.mod, dotted)
}

// value is what an index variable's value is: the object a rebinding
// names, or (instance set) the class its value is a call of.
func (r *resolver) value(t target) (target, bool, error) {
	key := "value\x00" + t.file.rel + "\x00" + t.path
	if err := r.enter(key); err != nil {
		return target{}, false, err
	}
	defer r.leave(key)
	v := t.b.value
	if isRebinding(v) {
		nt, err := r.exprIn(t, v)
		return nt, false, err
	}
	if callee, ok := calleeOf(v); ok {
		ct, err := r.exprIn(t, callee)
		if err == nil {
			ct, err = r.derefClass(ct)
		}
		if err != nil {
			return target{}, false, err
		}
		if ct.b != nil && ct.site == nil && ct.b.kind == KindClass {
			return ct, true, nil
		}
	}
	return target{}, false, fmt.Errorf("%w: the value of %s.%s", ErrNotFound, t.mod.name, t.path)
}

// calleeOf returns f when value is a call f(...) of a dotted name, its
// parentheses closing at the end.
func calleeOf(value string) (string, bool) {
	open := strings.IndexByte(value, '(')
	if open <= 0 || !strings.HasSuffix(value, ")") || !isDottedName(strings.TrimSpace(value[:open])) {
		return "", false
	}
	closedEarly := false
	depth := walkTopLevel(value, open, func(i int, c byte, depth int) bool {
		closedEarly = (c == ')' || c == ']' || c == '}') && depth == 0 && i != len(value)-1
		return !closedEarly
	})
	if closedEarly {
		return "", false
	}
	return strings.TrimSpace(value[:open]), depth == 0
}

// importFrom is what "from m import name" binds: m's attribute, or its
// submodule when m binds nothing else under that name (Python takes the
// attribute, which importing the submodule sets).
func (r *resolver) importFrom(m *module, name string) (target, error) {
	if sub := r.ix.modules[m.name+"."+name]; sub != nil && !r.shadows(m, name) {
		return target{mod: sub}, nil
	}
	return r.moduleAttr(m, name)
}

// count counts one step of a navigation against its bound.
func (r *resolver) count() error {
	r.steps++
	if r.steps > maxNavSteps {
		return fmt.Errorf("%w: more than %d lookups", errCycle, maxNavSteps)
	}
	return nil
}

// indexEntity is what a place of the index is.
func indexEntity(t target) entity {
	e := entity{kind: entOpaque, node: -1, t: t, fn: -1, bind: -1, cls: classRef{local: -1}}
	switch {
	case t.b == nil && t.site == nil:
		e.kind, e.mod = entModule, t.mod
	case t.site != nil:
	case t.b.kind == KindClass:
		e.kind, e.cls = entClass, classRef{local: -1, t: t}
	case t.b.kind == KindFunction:
		e.kind = entFunction
	case t.b.kind == KindImport:
		e.kind = entExternal
	}
	return e
}
