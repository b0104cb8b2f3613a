package diagnose

import "github.com/torchlsp/torchlsp/server/syntax"

// classNames are the names of the buffer's classes; made once.
func (v classFlow) classNames() map[string]bool {
	if v.classes == nil {
		a := v.a
		v.classes = map[string]bool{}
		for _, c := range a.classes {
			a.work++
			if nm := a.t.Child(c, syntax.FieldName); nm >= 0 {
				v.classes[a.t.Text(nm)] = true
			}
		}
	}
	return v.classes
}

// classInits maps each class name of the buffer to the __init__
// definitions of its classes; made once.
func (v classFlow) classInits() map[string][]int32 {
	a := v.a
	if v.inits != nil {
		return v.inits
	}
	t := a.t
	v.inits = map[string][]int32{}
	for _, def := range a.funcs["__init__"] {
		a.work++
		cls := t.clsOf[def]
		if cls < 0 || t.fnOf[def] != t.fnOf[cls] {
			continue // not a method of a class, or a nested function's
		}
		if nm := t.Child(cls, syntax.FieldName); nm >= 0 {
			v.inits[t.Text(nm)] = append(v.inits[t.Text(nm)], def)
		}
	}
	return v.inits
}

// instanceSite records, when site s makes the instances of a class run
// compiled code when called (a method forward or __call__ decorated by a
// compile, or a method compiling self in place: self.compile(...)), the
// class's instances as a target (classKey): Net() of such a class is a
// compiled callable, which followValues then follows.
func (v classFlow) instanceSite(s *compileSite) {
	a := v.a
	t := a.t
	cls := int32(-1)
	switch {
	case s.kind == siteInPlace && s.target() == "self":
		if s.fn >= 0 {
			cls = t.clsOf[s.fn]
		}
	case s.call == nil || t.Kind(t.Parent(s.node)) == syntax.KindDecorator:
		dec := t.Parent(s.node)
		dd := t.Parent(dec)
		if dd < 0 || t.Kind(dd) != syntax.KindDecoratedDefinition || t.clsOf[dd] < 0 {
			return
		}
		if name := (siteFacts{a}).decorated(dec); name == "forward" || name == "__call__" {
			cls = t.clsOf[dd]
		}
	}
	if cls < 0 {
		return
	}
	if nm := t.Child(cls, syntax.FieldName); nm >= 0 {
		name := t.Text(nm)
		v.addTarget([]*compileSite{s}, classKey(name))
	}
}

// poolFactories records the names bound to what a function of the buffer
// returns when it returns a new thread pool (def make_pool(): return
// ThreadPoolExecutor(4) ... pool = make_pool()), as pools, before the
// thread starts are read.
func (v classFlow) poolFactories() {
	a := v.a
	t := a.t
	for def, rs := range a.returns {
		for _, r := range rs {
			a.work++
			r = t.Unwrap(r)
			if t.Kind(r) != syntax.KindCall || !executorTypes[a.chainQual(t.Child(r, syntax.FieldFunction))] {
				continue
			}
			name := t.Child(def, syntax.FieldName)
			if name < 0 || len(a.funcs[t.Text(name)]) != 1 {
				break
			}
			workers := 0
			for _, c := range a.callsIn(r) {
				if c.node == r {
					workers = (threadFacts{a}).poolWorkers(c)
				}
			}
			for _, c := range a.callsNamed(t.Text(name)) {
				a.work++
				if c.qual != "" {
					continue
				}
				if b := (threadFacts{a}).boundName(c); b != "" {
					if _, known := a.execs[b]; !known {
						a.execs[b] = workers
					}
				}
			}
			break
		}
	}
	v.poolValues()
}

// poolValues records pools handed on as values, before the thread starts
// are read: names bound to a pool's constructor, the parameters of the
// file's functions and classes' __init__ handed one
// (Server(ThreadPoolExecutor(4))), and what those are assigned to
// (self.pool = pool). Each round is one pass over calls and assignments.
func (v classFlow) poolValues() {
	a := v.a
	t := a.t
	set := func(name string, w int) bool {
		if _, known := a.execs[name]; known || name == "" {
			return false
		}
		a.execs[name] = w
		return true
	}
	var ctors []*callInfo
	made := false
	for _, c := range a.calls {
		a.work++
		if executorTypes[c.qual] {
			made = true
			set((threadFacts{a}).boundName(c), (threadFacts{a}).poolWorkers(c))
		} else if c.qual == "" && (len(c.args) > 0 || len(c.kwargs) > 0) {
			ctors = append(ctors, c)
		}
	}
	if !made {
		return
	}
	for range maxPoolRounds {
		changed := false
		for _, c := range ctors {
			a.work++
			for _, def := range v.defsCalled(c.calleeNode, c) {
				params := a.params(def)
				for i := range params {
					a.work++
					if arg := (siteFacts{a}).argumentFor(c, params, i); arg >= 0 {
						if w, ok := (threadFacts{a}).poolExpr(arg); ok && set(params[i].name, w) {
							changed = true
						}
					}
				}
			}
		}
		for _, n := range v.flows {
			a.work++
			if t.Kind(n) != syntax.KindAssignment {
				continue
			}
			r, l := t.Child(n, syntax.FieldRight), t.Child(n, syntax.FieldLeft)
			if r < 0 || l < 0 || t.Chain(t.Unwrap(l)) == nil {
				continue
			}
			if w, ok := (threadFacts{a}).poolExpr(r); ok && set(t.Text(t.Unwrap(l)), w) {
				changed = true
			}
		}
		if !changed {
			break
		}
	}
}

// classFlow: the classes whose instances hold compiled code, and the pools made and handed on. It reads and fills the value flow it embeds.
type classFlow struct{ *valueFlow }
