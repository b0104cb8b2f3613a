package wsmodel

import (
	"slices"
	"strings"
)

// valKind says what a value is.
type valKind uint8

const (
	valCompiled valKind = iota + 1 // what a compile site made
	valFunc                        // a function or method (bound or not)
	valClass
	valInstance
	valModule
	// valExternal is a name of code outside the workspace
	// (concurrent.futures.ThreadPoolExecutor); valExternalInstance what a
	// call of it returns. Only thread pools are asked about them.
	valExternal
	valExternalInstance
)

// value is what an expression may hold.
type value struct {
	kind valKind
	// qual is a function's, class's or module's qualified name
	// (module.Qual); for an instance, its class's.
	qual string
	// file and compile name a compiled value's site.
	file    *File
	compile int
}

// maxDepth bounds how many steps one resolution follows (names through
// assignments, returns, attributes, bases and imports): past it a value
// is unknown, never guessed.
const maxDepth = 12

// maxValues bounds the values one expression may hold.
const maxValues = 16

// resolver resolves expressions of a model's files; its memo lives as
// long as one computation of the verdicts.
type resolver struct {
	m    *Model
	memo map[memoKey][]value
	busy map[memoKey]bool // resolutions under way: a cycle yields nothing
	work int              // steps taken, bounded by maxWork
	// callers are, by function, the calls and starts that pass it
	// arguments; made on the first parameter asked about (indexing says
	// it is under way: parameters read meanwhile are unknown).
	callers  map[string][]callerRef
	indexing bool
}

// callerRef is a call of a function: where it stands and what it passes.
type callerRef struct {
	file   *File
	scope  string
	args   []Expr
	kwargs []Kwarg
	// bound is set when the call passes self itself (obj.method(x)).
	bound bool
}

type memoKey struct {
	file  *File
	scope string
	kind  ExprKind
	text  string
	line  int
}

// maxWork bounds the steps one computation of the verdicts takes over
// the whole workspace: a hostile or huge workspace costs at most this,
// and what is not reached then is not reported.
const maxWork = 2_000_000

func newResolver(m *Model) *resolver {
	m.link()
	return &resolver{m: m, memo: map[memoKey][]value{}, busy: map[memoKey]bool{}}
}

// eval is what e, read in scope of f, may hold.
func (r *resolver) eval(f *File, scope string, e Expr, depth int) []value {
	if depth > maxDepth || r.work > maxWork {
		return nil
	}
	r.work++
	if e.Kind == ExprCompiled {
		return []value{{kind: valCompiled, file: f, compile: e.Compile}}
	}
	k := memoKey{f, scope, e.Kind, e.Text, e.Line}
	if v, ok := r.memo[k]; ok {
		return v
	}
	if r.busy[k] {
		return nil
	}
	r.busy[k] = true
	var out []value
	switch e.Kind {
	case ExprName:
		out = r.dotted(f, scope, e.Text, e.Line, depth)
	case ExprSubscript:
		out = r.dotted(f, scope, e.Text+"[]", e.Line, depth)
	case ExprCall:
		for _, v := range r.dotted(f, scope, e.Text, e.Line, depth) {
			out = addValues(out, r.called(v, depth+1)...)
		}
	}
	delete(r.busy, k)
	r.memo[k] = out
	return out
}

// called is what calling v returns.
func (r *resolver) called(v value, depth int) []value {
	switch v.kind {
	case valClass:
		return []value{{kind: valInstance, qual: v.qual}}
	case valExternal:
		return []value{{kind: valExternalInstance, qual: v.qual}}
	case valFunc:
		d, ok := r.m.defs[v.qual]
		if !ok {
			return nil
		}
		var out []value
		fs := d.file.index()
		for _, e := range fs.returns[d.def.Qual] {
			out = addValues(out, r.eval(d.file, d.def.Qual, e, depth+1)...)
		}
		return out
	}
	return nil
}

// dotted resolves a chain of names read in scope of f at line at (-1:
// anywhere); the last name may end in [] for a container's elements.
func (r *resolver) dotted(f *File, scope, text string, at, depth int) []value {
	parts := strings.Split(text, ".")
	vals := r.head(f, scope, parts[0], at, depth)
	for _, p := range parts[1:] {
		var next []value
		for _, v := range vals {
			next = addValues(next, r.member(v, p, depth+1)...)
		}
		vals = next
		if len(vals) == 0 {
			return nil
		}
	}
	return vals
}

// head resolves the first name of a chain: self, a name bound in the
// scope or one around it, a definition, or an import.
func (r *resolver) head(f *File, scope, name string, at, depth int) []value {
	fs := f.index()
	if fs == nil {
		return nil
	}
	if name == "self" || name == "cls" {
		if cls := fs.classOf(scope); cls != "" {
			q := r.qual(f, cls)
			if name == "cls" {
				return []value{{kind: valClass, qual: q}}
			}
			return []value{{kind: valInstance, qual: q}}
		}
	}
	inMethod := fs.classOf(scope) != ""
	for s := scope; ; s = parentScope(s) {
		// A method does not see its class's names.
		if isClass := fs.defs[s] != nil && fs.defs[s].IsClass; !(isClass && s != scope && inMethod) {
			var out []value
			rebound := false
			for _, e := range fs.bindings[s][name] {
				// In the reading scope's own body, an assignment made
				// at or after the read is not what it reads; names of
				// enclosing scopes are read when the code runs, after
				// the module's body.
				if s == scope && at >= 0 && e.Line >= at {
					continue
				}
				rebound = true
				out = addValues(out, r.eval(f, s, e, depth+1)...)
			}
			if d := fs.defs[join(s, name)]; d != nil {
				out = addValues(out, r.defValue(f, d)...)
			}
			// A parameter the function assigns again before the read
			// (model = getattr(model, "_orig_mod", model)) is no longer
			// known to hold what callers pass: nothing is guessed.
			if d := fs.defs[s]; d != nil && !d.IsClass && len(out) == 0 && !rebound {
				out = r.param(f, d, name, depth+1)
			}
			if len(out) > 0 {
				return out
			}
		}
		if s == "" {
			break
		}
	}
	if q, ok := f.Imports[name]; ok {
		if out := r.global(q, depth+1); len(out) > 0 {
			return out
		}
		if top, _, _ := strings.Cut(q, "."); !r.m.tops[top] {
			return []value{{kind: valExternal, qual: q}}
		}
	}
	return nil
}

// param is what a function's parameter holds: what its callers pass it,
// across files (the callers of the model's version; a function nobody
// calls has parameters of unknown value).
func (r *resolver) param(f *File, d *Def, name string, depth int) []value {
	idx := slices.Index(d.Params, name)
	if idx < 0 || r.indexing || depth > maxDepth {
		return nil
	}
	if r.callers == nil {
		r.indexCallers()
	}
	var out []value
	for _, c := range r.callers[r.qual(f, d.Qual)] {
		i := idx
		if c.bound {
			i--
		}
		if k := slices.IndexFunc(c.kwargs, func(k Kwarg) bool { return k.Name == name }); k >= 0 {
			out = addValues(out, r.eval(c.file, c.scope, c.kwargs[k].Value, depth+1)...)
		} else if i >= 0 && i < len(c.args) && c.args[i].Kind != 0 {
			out = addValues(out, r.eval(c.file, c.scope, c.args[i], depth+1)...)
		}
	}
	return out
}

// indexCallers finds, once, the function every call and start of the
// model calls, and what it passes. What it resolves meanwhile, with
// parameters unknown, is memoized apart and dropped after: a later
// resolution of the same expression sees what callers pass.
func (r *resolver) indexCallers() {
	r.indexing = true
	memo := r.memo
	r.memo = map[memoKey][]value{}
	defer func() { r.indexing, r.memo = false, memo }()
	r.callers = map[string][]callerRef{}
	add := func(f *File, scope string, callee Expr, args []Expr, kwargs []Kwarg) {
		if len(args) == 0 && len(kwargs) == 0 {
			return
		}
		for _, v := range r.eval(f, scope, callee, 0) {
			if v.kind != valFunc {
				continue
			}
			d := r.m.defs[v.qual]
			bound := d.def != nil && d.def.Class != "" && strings.Contains(callee.Text, ".")
			r.callers[v.qual] = append(r.callers[v.qual], callerRef{file: f, scope: scope, args: args, kwargs: kwargs, bound: bound})
		}
	}
	for _, f := range r.m.files {
		for i := range f.Calls {
			c := &f.Calls[i]
			add(f, c.Scope, c.Callee, c.Args, c.Kwargs)
		}
		for i := range f.Starts {
			st := &f.Starts[i]
			for _, e := range st.Targets {
				add(f, st.Scope, e, st.Args, nil)
			}
		}
	}
}

// qual is a definition's qualified name.
func (r *resolver) qual(f *File, q string) string {
	if f.Module == "" {
		return ":" + f.Path + ":" + q
	}
	return f.Module + "." + q
}

// defValue is what a definition's name holds.
func (r *resolver) defValue(f *File, d *Def) []value {
	q := r.qual(f, d.Qual)
	switch {
	case d.IsClass:
		return []value{{kind: valClass, qual: q}}
	case d.Compiled >= 0:
		return []value{{kind: valCompiled, file: f, compile: d.Compiled}}
	}
	return []value{{kind: valFunc, qual: q}}
}

// global resolves an absolute qualified name: a module of the workspace,
// or a name in one.
func (r *resolver) global(q string, depth int) []value {
	if depth > maxDepth {
		return nil
	}
	if _, ok := r.m.modules[q]; ok {
		return []value{{kind: valModule, qual: q}}
	}
	i := strings.LastIndexByte(q, '.')
	if i < 0 {
		return nil
	}
	var out []value
	for _, v := range r.global(q[:i], depth+1) {
		out = addValues(out, r.member(v, q[i+1:], depth+1)...)
	}
	return out
}

// member is what v.name holds.
func (r *resolver) member(v value, name string, depth int) []value {
	if depth > maxDepth || r.work > maxWork {
		return nil
	}
	r.work++
	switch v.kind {
	case valModule:
		if f := r.m.modules[v.qual]; f != nil {
			if out := r.head(f, "", name, -1, depth+1); len(out) > 0 {
				return out
			}
		}
		if _, ok := r.m.modules[v.qual+"."+name]; ok {
			return []value{{kind: valModule, qual: v.qual + "." + name}}
		}
	case valClass, valInstance:
		return r.classMember(v, name, depth+1, 0)
	case valExternal:
		return []value{{kind: valExternal, qual: v.qual + "." + name}}
	}
	return nil
}

// maxBases bounds how many classes deep a member is looked for.
const maxBases = 4

// classMember is what a class or its instance holds as name: a method,
// an attribute set on self in a method, or a class attribute; then its
// bases of the workspace.
func (r *resolver) classMember(v value, name string, depth, bases int) []value {
	d, ok := r.m.defs[v.qual]
	if !ok || !d.def.IsClass || bases > maxBases {
		return nil
	}
	f, fs := d.file, d.file.index()
	var out []value
	if md := fs.defs[join(d.def.Qual, name)]; md != nil {
		out = addValues(out, r.defValue(f, md)...)
	}
	for _, e := range fs.bindings[d.def.Qual][name] {
		out = addValues(out, r.eval(f, d.def.Qual, e, depth+1)...)
	}
	if v.kind == valInstance {
		for _, s := range fs.attrs[d.def.Qual][name] {
			out = addValues(out, r.eval(f, s.scope, s.value, depth+1)...)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, b := range d.def.Bases {
		for _, bv := range r.dotted(f, parentScope(d.def.Qual), b, -1, depth+1) {
			if bv.kind == valClass {
				out = addValues(out, r.classMember(value{kind: v.kind, qual: bv.qual}, name, depth+1, bases+1)...)
			}
		}
	}
	return out
}

// addValues adds vs to out, once each, up to maxValues.
func addValues(out []value, vs ...value) []value {
	for _, v := range vs {
		if len(out) >= maxValues {
			return out
		}
		dup := false
		for _, o := range out {
			if o == v {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	return out
}
