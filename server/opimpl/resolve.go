package opimpl

import (
	"fmt"
	"strings"
)

// registrar is a function that registers the op it is given.
type registrar struct {
	kind  Kind
	table string // KindOtherDecomposition's table
	// opParam and opKw say where the op is passed: the positional index
	// (-1 when keyword-only) and the keyword.
	opParam int
	opKw    string
	// decomp marks torch._decomp.register_decomposition and what binds it
	// with functools.partial: type= and registry= pick the table at each
	// call.
	decomp bool
	// refMaker marks torch._refs' _make_elementwise_*_reference, which
	// names the op after the function it wraps; prefixed when the op name
	// also carries the module's (special_, linalg_…).
	refMaker bool
	prefixed bool
	// implPath/implDef/implFunc locate the function a factory registers
	// (a def inside the factory), implDef -1 when unknown.
	implPath string
	implDef  int
	implFunc string
	// body is the module and function whose body makes this registrar;
	// registering calls inside it are the registrar's machinery.
	bodyModule string
	bodyDef    int
}

// opArg returns the argument of c that holds the op.
func (g *registrar) opArg(c *callFact) (expr, bool) {
	if g.opParam >= 0 && g.opParam < len(c.args) {
		return c.args[g.opParam], true
	}
	if g.opKw != "" {
		if e, ok := c.kw(g.opKw); ok {
			return e, true
		}
	}
	return expr{}, false
}

// seeds are the registering functions every torch version has under
// these names (where it has the module at all).
func seeds() map[string]*registrar {
	dec := func(kind Kind, kw string) *registrar {
		return &registrar{kind: kind, opParam: 0, opKw: kw, implDef: -1, bodyDef: -1}
	}
	d := dec(KindDecomposition, "aten_op")
	d.decomp = true
	unary := &registrar{refMaker: true, kind: KindDecomposition, opParam: -1, implDef: -1, bodyDef: -1}
	binary := *unary
	return map[string]*registrar{
		"torch._decomp.register_decomposition":                d,
		"torch._meta_registrations.register_meta":             dec(KindMeta, "op"),
		"torch._inductor.lowering.register_lowering":          dec(KindLowering, "aten_fn"),
		"torch._inductor.lowering._register_lowering":         dec(KindLowering, "aten_fn"),
		"torch._inductor.lowering._register_foreach_lowering": dec(KindLowering, "aten_fn"),
		"torch._inductor.lowering.make_fallback":              dec(KindFallback, "op"),
		"torch._refs._make_elementwise_unary_reference":       unary,
		"torch._refs._make_elementwise_binary_reference":      &binary,
	}
}

// resolver ties the files' facts together.
type resolver struct {
	files  []*fileFacts
	byMod  map[string]*fileFacts
	regs   map[string]*registrar
	stats  Stats
	seeded map[string]bool
}

func newResolver(files []*fileFacts) *resolver {
	r := &resolver{files: files, byMod: make(map[string]*fileFacts), regs: seeds(), seeded: map[string]bool{}}
	for _, ff := range files {
		r.byMod[ff.module] = ff
	}
	for q, g := range r.regs {
		r.seeded[q] = true
		mod, name := splitLast(q)
		if ff := r.byMod[mod]; ff != nil {
			if i, ok := ff.topDefs[name]; ok {
				g.bodyModule, g.bodyDef = mod, i
				if g.refMaker {
					g.prefixed = ff.defs[i].getAtenOp
				}
			}
		}
	}
	return r
}

func splitLast(q string) (string, string) {
	if i := strings.LastIndexByte(q, '.'); i >= 0 {
		return q[:i], q[i+1:]
	}
	return "", q
}

// qual resolves a dotted name as written in ff to a qualified name,
// through the file's imports and aliases and the re-exports of the
// modules it names.
func (r *resolver) qual(ff *fileFacts, dotted string) string {
	first, rest, _ := strings.Cut(dotted, ".")
	base, ok := ff.aliases[first]
	if !ok {
		base = ff.module + "." + first // a name of the module itself
	}
	return r.canon(joinDot(base, rest))
}

// canon follows a qualified name through the modules that re-export or
// alias it, and spells torch's op namespace one way.
func (r *resolver) canon(q string) string {
	for range 8 {
		q = canonOps(q)
		if strings.HasPrefix(q, "torch.ops.") {
			return q
		}
		next, ok := r.reexport(q)
		if !ok || next == q {
			return q
		}
		q = next
	}
	return q
}

// canonOps spells every path to torch's op namespace torch.ops.
func canonOps(q string) string {
	for _, p := range []string{"torch._ops.ops.", "torch._ops.ops"} {
		if rest, ok := strings.CutPrefix(q, p); ok {
			if p == "torch._ops.ops" && rest != "" {
				continue
			}
			return joinDot("torch.ops", rest)
		}
	}
	return q
}

// reexport rewrites q when the longest scanned module it starts with binds
// the next component to something else.
func (r *resolver) reexport(q string) (string, bool) {
	for i := len(q); i > 0; i = strings.LastIndexByte(q[:i], '.') {
		mod := q[:i]
		ff := r.byMod[mod]
		if ff == nil {
			continue
		}
		if i == len(q) {
			return q, false // the module itself
		}
		name, rest, _ := strings.Cut(q[i+1:], ".")
		target, ok := ff.aliases[name]
		if !ok || target == mod+"."+name {
			return q, false
		}
		return joinDot(target, rest), true
	}
	return q, false
}

// ops reads the ops an argument names: one, or a list or tuple of them.
func (r *resolver) ops(ff *fileFacts, e expr) []Op {
	if e.elems != nil {
		var out []Op
		for _, x := range e.elems {
			out = append(out, r.ops(ff, x)...)
		}
		return out
	}
	if e.dotted == "" {
		return nil
	}
	q := r.qual(ff, e.dotted)
	rest, ok := strings.CutPrefix(q, "torch.ops.")
	if !ok {
		return nil
	}
	op, ok := ParseOp(rest)
	if !ok {
		return nil
	}
	return []Op{op}
}

// registrarOf returns the registrar a call's callee names.
func (r *resolver) registrarOf(ff *fileFacts, c *callFact) *registrar {
	return r.regs[r.qual(ff, c.callee)]
}

// tableOf says which table a registering call fills.
func (r *resolver) tableOf(ff *fileFacts, c *callFact, g *registrar) (Kind, string) {
	if !g.decomp {
		return g.kind, g.table
	}
	kind, table := g.kind, g.table
	get := func(name string, pos int) (expr, bool) {
		if e, ok := c.kw(name); ok {
			return e, true
		}
		if pos >= 0 && pos < len(c.args) {
			return c.args[pos], true
		}
		return expr{}, false
	}
	if t, ok := get("type", -1); ok && t.isStr {
		switch t.str {
		case "meta":
			kind = KindMeta
		case "pre_autograd":
			kind = KindPreAutograd
		case "post_autograd":
			kind = KindDecomposition
		}
	}
	if reg, ok := get("registry", 1); ok && !reg.isNone && reg.dotted != "" {
		if ff != nil && isParamOf(ff, c.scope, reg.dotted) {
			return kind, table // passed through a wrapper: the wrapper's caller decides
		}
		q := reg.dotted
		if ff != nil {
			q = r.qual(ff, reg.dotted)
		}
		switch q {
		case "torch._decomp.decomposition_table":
			kind = KindDecomposition
		case "torch._decomp.meta_table":
			kind = KindMeta
		case "torch._decomp.pre_autograd_decomposition_table":
			kind = KindPreAutograd
		case "torch._inductor.decomposition.decompositions":
			kind = KindInductorDecomposition
		default:
			_, name := splitLast(q)
			kind, table = KindOtherDecomposition, name
		}
	}
	return kind, table
}

// isParamOf reports whether name is a parameter of the function scope or
// of one enclosing it, and returns the function that owns it.
func isParamOf(ff *fileFacts, scope int, name string) bool {
	_, ok := paramOwner(ff, scope, name)
	return ok
}

func paramOwner(ff *fileFacts, scope int, name string) (int, bool) {
	for ; scope >= 0; scope = ff.defs[scope].parent {
		for _, p := range ff.defs[scope].params {
			if p.name == name {
				return scope, true
			}
		}
	}
	return -1, false
}

// outermost returns the module-level function containing scope, or -1.
func outermost(ff *fileFacts, scope int) int {
	for scope >= 0 && ff.defs[scope].parent >= 0 {
		scope = ff.defs[scope].parent
	}
	return scope
}

// infer finds the functions that pass their parameter on to a
// registrar, and the functools.partial bindings of registrars, until no
// new one appears.
func (r *resolver) infer() {
	for round := 0; round < 8; round++ {
		changed := false
		for _, ff := range r.files {
			for i := range ff.assigns {
				if r.inferPartial(ff, &ff.assigns[i]) {
					changed = true
				}
			}
			for i := range ff.calls {
				if r.inferWrapper(ff, &ff.calls[i]) {
					changed = true
				}
			}
		}
		if !changed {
			return
		}
	}
}

// inferPartial makes name = functools.partial(REG, kw=...) a registrar.
func (r *resolver) inferPartial(ff *fileFacts, a *assignFact) bool {
	if a.call < 0 {
		return false
	}
	q := ff.module + "." + a.name
	if _, ok := r.regs[q]; ok {
		return false
	}
	c := &ff.calls[a.call]
	if cq := r.qual(ff, c.callee); cq != "functools.partial" || len(c.args) != 1 {
		return false
	}
	g := r.regs[r.qual(ff, c.args[0].dotted)]
	if c.args[0].dotted == "" || g == nil {
		return false
	}
	ng := *g
	if !ng.decomp {
		for _, k := range c.kwargs {
			if k.name == ng.opKw {
				return false // the op itself is bound: not a registrar
			}
		}
	}
	if ng.decomp {
		// The bound registry= and type= are names of this file: settle the
		// table here, once.
		probe := &callFact{kwargs: c.kwargs, scope: -1}
		ng.kind, ng.table = r.tableOf(ff, probe, g)
		ng.decomp = false
	}
	r.regs[q] = &ng
	return true
}

// inferWrapper makes the function that passes its parameter to the
// registrar c calls a registrar of the same table.
func (r *resolver) inferWrapper(ff *fileFacts, c *callFact) bool {
	if c.scope < 0 {
		return false
	}
	g := r.registrarOf(ff, c)
	if g == nil || g.refMaker {
		return false
	}
	e, ok := g.opArg(c)
	if !ok || e.dotted == "" || strings.Contains(e.dotted, ".") {
		return false
	}
	owner, ok := paramOwner(ff, c.scope, e.dotted)
	if !ok || ff.defs[owner].parent >= 0 {
		return false // not a parameter, or of a function nobody outside can call
	}
	d := ff.defs[owner]
	q := ff.module + "." + d.name
	if _, ok := r.regs[q]; ok {
		return false
	}
	var p param
	for _, x := range d.params {
		if x.name == e.dotted {
			p = x
		}
	}
	kind, table := r.tableOf(ff, c, g)
	ng := &registrar{kind: kind, table: table, opParam: p.initial, opKw: p.name, implDef: -1, bodyModule: ff.module, bodyDef: owner}
	if path, def, fn, ok := r.registeredFunc(ff, c); ok {
		ng.implPath, ng.implDef, ng.implFunc = path, def, fn
	} else if g.implDef >= 0 {
		ng.implPath, ng.implDef, ng.implFunc = g.implPath, g.implDef, g.implFunc
	}
	r.regs[q] = ng
	return true
}

// registeredFunc locates the function a registering call registers
// itself: the def it decorates, or the named def it is applied to.
func (r *resolver) registeredFunc(ff *fileFacts, c *callFact) (path string, def int, fn string, ok bool) {
	if c.decorates >= 0 {
		d := ff.defs[c.decorates]
		return ff.rel, d.first, d.name, true
	}
	if c.applied != nil && c.applied.dotted != "" && !strings.Contains(c.applied.dotted, ".") {
		name := c.applied.dotted
		// The innermost def of that name visible from the call.
		for i := len(ff.defs) - 1; i >= 0; i-- {
			d := ff.defs[i]
			if d.name == name && (d.parent == -1 || d.parent == c.scope || isAncestor(ff, d.parent, c.scope)) {
				return ff.rel, d.first, d.name, true
			}
		}
	}
	return "", -1, "", false
}

func isAncestor(ff *fileFacts, anc, scope int) bool {
	for ; scope >= 0; scope = ff.defs[scope].parent {
		if scope == anc {
			return true
		}
	}
	return false
}

// inBody reports whether a call is part of a registrar's own machinery:
// inside the body of a function that is a registrar.
func (r *resolver) inBody(ff *fileFacts, c *callFact) bool {
	top := outermost(ff, c.scope)
	if top < 0 {
		return false
	}
	_, ok := r.regs[ff.module+"."+ff.defs[top].name]
	return ok
}

// registrations lists every registering call's ops.
func (r *resolver) registrations() []Impl {
	var out []Impl
	for _, ff := range r.files {
		for i := range ff.calls {
			out = append(out, r.registration(ff, &ff.calls[i])...)
		}
	}
	return out
}

func (r *resolver) registration(ff *fileFacts, c *callFact) []Impl {
	base := Impl{Path: ff.rel, Line: c.line, Col: c.col, EndCol: c.endCol, Def: -1, Cond: c.cond}
	if recv, ok := strings.CutSuffix(c.callee, ".py_impl"); ok {
		ops := r.ops(ff, expr{dotted: recv})
		if len(ops) == 0 {
			return nil
		}
		base.Kind = KindPyImpl
		if len(c.args) > 0 && c.args[0].dotted != "" {
			_, base.Table = splitLast(c.args[0].dotted)
		}
		r.withFunc(ff, c, nil, &base)
		return expand(base, ops)
	}
	g := r.registrarOf(ff, c)
	if g == nil {
		return nil
	}
	if g.refMaker {
		return r.refMade(ff, c, g, base)
	}
	e, ok := g.opArg(c)
	if !ok {
		return nil
	}
	ops := r.ops(ff, e)
	if len(ops) == 0 {
		if !r.inBody(ff, c) && !(e.dotted != "" && isParamOf(ff, c.scope, e.dotted)) {
			r.unresolved(ff, c)
		}
		return nil
	}
	base.Kind, base.Table = r.tableOf(ff, c, g)
	r.withFunc(ff, c, g, &base)
	return expand(base, ops)
}

// unresolved counts a registering call whose op has no static name.
func (r *resolver) unresolved(ff *fileFacts, c *callFact) {
	r.stats.Unresolved++
	r.stats.UnresolvedAt = append(r.stats.UnresolvedAt, fmt.Sprintf("%s:%d %s", ff.rel, c.line+1, c.callee))
}

// withFunc fills in the registered function.
func (r *resolver) withFunc(ff *fileFacts, c *callFact, g *registrar, im *Impl) {
	if path, def, fn, ok := r.registeredFunc(ff, c); ok {
		im.DefPath, im.Def, im.Func = path, def, fn
		return
	}
	if g != nil && g.implDef >= 0 {
		im.DefPath, im.Def, im.Func = g.implPath, g.implDef, g.implFunc
	}
}

func expand(base Impl, ops []Op) []Impl {
	out := make([]Impl, 0, len(ops))
	for _, op := range ops {
		im := base
		im.Op = op
		out = append(out, im)
	}
	return out
}

// refMade reads a _make_elementwise_*_reference registration: the op is
// aten_op= when given, else named after the wrapped function (and, in
// newer torch, its torch._refs submodule).
func (r *resolver) refMade(ff *fileFacts, c *callFact, g *registrar, base Impl) []Impl {
	if e, ok := c.kw("should_register_decomposition"); ok && e.isBool && !e.truth {
		return nil
	}
	base.Kind = KindDecomposition
	if e, ok := c.kw("aten_op"); ok {
		if e.isNone {
			return nil
		}
		ops := r.ops(ff, e)
		if len(ops) == 0 {
			if !r.inBody(ff, c) {
				r.unresolved(ff, c)
			}
			return nil
		}
		r.withFunc(ff, c, nil, &base)
		return expand(base, ops)
	}
	name := ""
	if e, ok := c.kw("name"); ok && e.isStr {
		name = e.str
	}
	switch {
	case c.decorates >= 0:
		d := ff.defs[c.decorates]
		if name == "" {
			name = d.name
		}
		base.DefPath, base.Def, base.Func = ff.rel, d.first, d.name
	case len(c.args) > 0 && c.args[0].dotted != "":
		// Older torch: mul = _make_elementwise_binary_reference(prims.mul, …).
		if name == "" {
			_, name = splitLast(c.args[0].dotted)
		}
	default:
		return nil
	}
	if !strings.HasPrefix(ff.module, "torch._refs") || r.inBody(ff, c) {
		return nil
	}
	if g.prefixed {
		if sub := strings.TrimPrefix(strings.TrimPrefix(ff.module, "torch._refs"), "."); sub != "" {
			name = strings.ReplaceAll(sub, ".", "_") + "_" + name
		}
	}
	return expand(base, []Op{{NS: "aten", Name: name}})
}

// refs lists the names torch._refs defines at module level: functions
// (at their first line) and names bound to a call or another name.
func (r *resolver) refs() []Impl {
	var out []Impl
	for _, ff := range r.files {
		if ff.module != "torch._refs" && !strings.HasPrefix(ff.module, "torch._refs.") {
			continue
		}
		opPrefix := ""
		if sub := strings.TrimPrefix(strings.TrimPrefix(ff.module, "torch._refs"), "."); sub != "" && sub != "nn.functional" {
			opPrefix = strings.ReplaceAll(sub, ".", "_") + "_"
		}
		for name, i := range ff.topDefs {
			d := ff.defs[i]
			out = append(out, Impl{
				Kind: KindRef, Op: Op{NS: "aten", Name: opPrefix + name}, Ref: ff.module + "." + name,
				Path: ff.rel, Line: d.first, Col: d.firstCol, EndCol: d.firstEnd,
				Func: name, DefPath: ff.rel, Def: d.first,
			})
		}
		for _, a := range ff.assigns {
			if _, isDef := ff.topDefs[a.name]; isDef {
				continue // rebound after its def: the def is what the name held first
			}
			out = append(out, Impl{
				Kind: KindRef, Op: Op{NS: "aten", Name: opPrefix + a.name}, Ref: ff.module + "." + a.name,
				Path: ff.rel, Line: a.line, Col: a.col, EndCol: a.col + len(a.name), Def: -1,
			})
		}
	}
	return out
}
