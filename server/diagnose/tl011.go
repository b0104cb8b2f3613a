package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/pyscope"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// TL011: an output of compiled code with CUDA graphs kept past the run
// that reuses its memory. A call counts as a call of the compiled value
// only where the name it reads is bound to that value (the binding
// pyscope gives), and an output counts as lost only when the file lets
// no pending backward keep it and its inputs are not CPU tensors.

// hotName is one name a compile site with CUDA graphs is called by.
type hotName struct {
	name string
	site *compileSite
	cg   cudagraphState
	// bind is the binding (pyscope's) that holds the compiled value for
	// calls of the name alone: the assignment of the site's result, the
	// decorated def, or the module compiled in place; -1 when the name
	// is an attribute's (self.fwd), matched by name.
	bind int32
	// after is set when the compile changes an object bound before it
	// (model.compile(), model.forward = torch.compile(model.forward)):
	// the same binding's calls before it run eagerly.
	after bool
	// ext is, for a value compiled in another file, what the workspace
	// model says of it (site is nil then): its calls are the buffer's
	// calls the model names (Options.ExternalCalls).
	ext *ExternalCall
}

// same reports whether h and o hold what one compile site made.
func (h *hotName) same(o *hotName) bool {
	if h.ext == nil || o.ext == nil {
		return h.site == o.site
	}
	return h.ext.CompilePath == o.ext.CompilePath && h.ext.Compile == o.ext.Compile
}

// where names h's compile site in a message: "line 7" of the buffer, or
// "model.py:7" in another file.
func (h *hotName) where(t *tree) string {
	if h.ext != nil {
		return h.ext.At
	}
	return fmt.Sprintf("line %d", t.StartPos(h.site.node).Line+1)
}

// compiledAt is the related information naming a compile site of
// another file, and how the model followed the value there; nil for the
// buffer's own.
func (h *hotName) compiledAt() []Related {
	if h.ext == nil {
		return nil
	}
	return h.ext.Path
}

// hotCall is a call of compiled code with CUDA graphs.
type hotCall struct {
	call *callInfo
	h    *hotName
}

// gradFacts are what a function shows of autograd: whether it runs a
// backward or makes tensors that require grad, and where its backward
// calls start.
type gradFacts struct {
	autograd  bool
	backwards []int // start offsets, in source order
}

// tl011 holds what TL011 learns of the buffer once.
type tl011 struct {
	c     *checker
	calls []hotCall
	grads map[int32]*gradFacts // by function, -1 for the module
	// defaultDevice is set when the buffer changes the default device
	// (torch.set_default_device, with torch.device(...)): a tensor made
	// without device= need not be on the CPU.
	defaultDevice bool
}

// gradsOf returns the autograd facts of function fn (-1: the module's own
// statements), made once per function.
func (x *tl011) gradsOf(fn int32) *gradFacts {
	if g, ok := x.grads[fn]; ok {
		return g
	}
	a, t := x.c.a, x.c.t
	g := &gradFacts{}
	calls := a.calls
	if fn >= 0 {
		calls = a.callsIn(fn)
	}
	for _, call := range calls {
		a.work++
		if fn < 0 && call.fn >= 0 {
			continue
		}
		switch {
		case call.callee == "backward" && t.Kind(t.Unwrap(call.calleeNode)) == syntax.KindAttribute,
			call.qual == "torch.autograd.backward", call.qual == "torch.autograd.grad":
			g.autograd = true
			g.backwards = append(g.backwards, t.Start(call.node))
		case call.callee == "requires_grad_":
			g.autograd = true
		default:
			if kw, ok := call.keyword("requires_grad", t); ok && t.Kind(t.Unwrap(kw.value)) == syntax.KindTrue {
				g.autograd = true
			}
		}
	}
	x.grads[fn] = g
	return g
}

// pendingBackward reports whether the outputs of call keep a backward
// pending over the offsets [from, until): the function runs autograd,
// grad mode is not off at the call, and no backward starts in between.
// cudagraph trees start no new generation, and so free no output, while
// a forward's backward is pending (can_start_new_generation).
func (x *tl011) pendingBackward(call *callInfo, from, until int) bool {
	g := x.gradsOf(call.fn)
	if !g.autograd || x.gradOff(call.node) {
		return false
	}
	i := sort.SearchInts(g.backwards, from)
	return i >= len(g.backwards) || g.backwards[i] >= until
}

// gradOff reports whether node n runs with grad mode off: inside
// "with torch.no_grad()" (or inference_mode, set_grad_enabled(False)) or
// in a function decorated with one of those.
func (x *tl011) gradOff(n int32) bool {
	a, t := x.c.a, x.c.t
	for p, k := t.Parent(n), 0; p >= 0 && k < 512; p, k = t.Parent(p), k+1 {
		a.work++
		switch t.Kind(p) {
		case syntax.KindWithStatement:
			for _, cl := range t.CodeChildren(p) {
				if t.Kind(cl) != syntax.KindWithClause {
					continue
				}
				for _, item := range t.CodeChildren(cl) {
					a.work++
					if t.Kind(item) == syntax.KindWithItem && x.gradOffItem(item) {
						return true
					}
				}
			}
		case syntax.KindDecoratedDefinition:
			for _, d := range t.CodeChildren(p) {
				a.work++
				if t.Kind(d) == syntax.KindDecorator {
					if cs := t.CodeChildren(d); len(cs) == 1 && x.noGrad(cs[0]) {
						return true
					}
				}
			}
		case syntax.KindClassDefinition:
			return false
		}
	}
	return false
}

func (x *tl011) gradOffItem(item int32) bool {
	t := x.c.t
	v := t.Child(item, syntax.FieldValue)
	if v >= 0 && t.Kind(v) == syntax.KindAsPattern {
		if cs := t.CodeChildren(v); len(cs) > 0 {
			v = cs[0]
		}
	}
	return x.noGrad(v)
}

// gradModeOff are the context managers and decorators that turn grad
// mode off.
var gradModeOff = map[string]bool{
	"torch.no_grad": true, "torch.inference_mode": true, "torch.autograd.no_grad": true,
	"torch.autograd.grad_mode.no_grad": true, "torch.autograd.grad_mode.inference_mode": true,
}

// noGrad reports whether expression n turns grad mode off: torch.no_grad,
// torch.no_grad(), torch.inference_mode(), torch.set_grad_enabled(False).
func (x *tl011) noGrad(n int32) bool {
	a, t := x.c.a, x.c.t
	n = t.Unwrap(n)
	if n < 0 {
		return false
	}
	if t.Kind(n) != syntax.KindCall {
		return gradModeOff[a.chainQual(n)]
	}
	q := a.chainQual(t.Child(n, syntax.FieldFunction))
	args := t.CodeChildren(t.Child(n, syntax.FieldArguments))
	switch {
	case q == "torch.set_grad_enabled":
		return len(args) == 1 && t.Kind(t.Unwrap(args[0])) == syntax.KindFalse
	case gradModeOff[q]:
		return len(args) == 0 || t.Kind(t.Unwrap(args[0])) != syntax.KindFalse
	}
	return false
}

// onCPU reports whether every argument of call is, as far as the file
// tells, a tensor on the CPU: made by a torch factory of a size with no
// device or device "cpu", or by .cpu(), right there or by the name's last
// assignment before the call in the same function, in a file that does
// not change the default device. On the CPU nothing is captured; one CPU
// input among CUDA ones is not enough, since Inductor's graph partition
// (2.11's default) still records the CUDA parts.
func (x *tl011) onCPU(call *callInfo) bool {
	if x.defaultDevice {
		return false
	}
	args := append([]int32(nil), call.args...)
	for _, kw := range call.kwargs {
		args = append(args, kw.value)
	}
	for _, arg := range args {
		if !x.cpuTensor(arg, call) {
			return false
		}
	}
	return len(args) > 0 && len(call.splats) == 0
}

func (x *tl011) cpuTensor(e int32, call *callInfo) bool {
	a, t := x.c.a, x.c.t
	e = t.Unwrap(e)
	if t.Kind(e) == syntax.KindIdentifier {
		as := (nameFacts{a}).bindsOf(t.Text(e))
		i := a.firstFrom(as, t.Start(call.node)) - 1
		if i < 0 || t.fnOf[as[i]] != call.fn || t.Kind(as[i]) != syntax.KindAssignment {
			return false
		}
		l := t.Unwrap(t.Child(as[i], syntax.FieldLeft))
		if t.Kind(l) != syntax.KindIdentifier {
			return false
		}
		e = t.Unwrap(t.Child(as[i], syntax.FieldRight))
	}
	if e < 0 || t.Kind(e) != syntax.KindCall {
		return false
	}
	f := t.Child(e, syntax.FieldFunction)
	args := t.CodeChildren(t.Child(e, syntax.FieldArguments))
	if t.Kind(f) == syntax.KindAttribute && t.Text(t.Child(f, syntax.FieldAttribute)) == "cpu" {
		return len(args) == 0
	}
	if !tensorFactories[a.chainQual(f)] {
		return false
	}
	sized := false
	for _, arg := range args {
		a.work++
		if t.Kind(arg) != syntax.KindKeywordArgument {
			sized = true
			continue
		}
		switch t.Text(t.Child(arg, syntax.FieldName)) {
		case "size":
			sized = true
		case "device":
			if !x.cpuDevice(t.Child(arg, syntax.FieldValue)) {
				return false
			}
		}
	}
	return sized
}

// cpuDevice reports whether expression n is "cpu" or torch.device("cpu").
func (x *tl011) cpuDevice(n int32) bool {
	a, t := x.c.a, x.c.t
	n = t.Unwrap(n)
	if s, ok := t.PlainString(n); ok {
		return s == "cpu"
	}
	if t.Kind(n) == syntax.KindCall && a.chainQual(t.Child(n, syntax.FieldFunction)) == "torch.device" {
		if args := t.CodeChildren(t.Child(n, syntax.FieldArguments)); len(args) == 1 {
			s, ok := t.PlainString(t.Unwrap(args[0]))
			return ok && s == "cpu"
		}
	}
	return false
}

// aliasingMethods return a view of, or the same storage as, the tensor
// they are called on: what they give back is overwritten with it.
var aliasingMethods = map[string]bool{
	"detach": true, "view": true, "view_as": true, "reshape": true, "squeeze": true, "unsqueeze": true,
	"transpose": true, "permute": true, "t": true, "expand": true, "expand_as": true, "narrow": true,
	"flatten": true, "unflatten": true, "split": true, "chunk": true, "unbind": true, "contiguous": true,
	"as_strided": true, "select": true, "diagonal": true, "movedim": true, "swapaxes": true,
}

// appendMethods keep their argument in the container they are called on.
var appendMethods = map[string]bool{"append": true, "appendleft": true, "add": true, "insert": true, "put": true}

// overwrite is how an output of a compiled callable is kept past the
// next call of it.
type overwrite struct {
	why   string // for the message
	fixAt int32  // the expression to clone, or -1
}

// keptAcrossCalls decides whether the output of hot call hc is used
// after the next run of compiled code with CUDA graphs: kept in a
// container a loop fills, built into a list by a comprehension, or read
// after a later call of the same or of other such compiled code. It is
// not when a pending backward keeps the outputs alive until that run.
func (x *tl011) keptAcrossCalls(hc hotCall) (overwrite, bool) {
	c := x.c
	a, t := c.a, c.t
	call := hc.call
	top := (keptFacts{a}).holder(call.node)
	// [f(x) for x in xs], list(f(x) for x in xs)
	if p := t.Parent(top); p >= 0 && t.Field(top) == syntax.FieldBody && !x.pendingBackward(call, t.Start(p), t.End(p)) {
		switch t.Kind(p) {
		case syntax.KindListComprehension, syntax.KindSetComprehension, syntax.KindDictionaryComprehension:
			return overwrite{why: fmt.Sprintf("the comprehension at line %d keeps every output while it makes the next", t.StartPos(p).Line+1), fixAt: top}, true
		case syntax.KindGeneratorExpression:
			if args := t.Parent(p); args >= 0 && t.Kind(args) == syntax.KindCall {
				if q := a.chainQual(t.Child(args, syntax.FieldFunction)); collectors[q] || q == "" && collectors[t.Text(t.Child(args, syntax.FieldFunction))] {
					return overwrite{why: fmt.Sprintf("%s at line %d collects every output before it reads them", oneLineText(t.Text(t.Child(args, syntax.FieldFunction)), 24), t.StartPos(args).Line+1), fixAt: top}, true
				}
			}
		}
	}
	loop := (keptFacts{a}).enclosingLoop(call.node)
	if loop >= 0 && x.pendingBackward(call, t.Start(loop), t.End(loop)) {
		loop = -1 // every iteration's forward is a new node of the tree: none frees another's outputs
	}
	// for ...: outs.append(f(x)), or outs[i] = f(x)
	if loop >= 0 {
		if cont, ok := (keptFacts{a}).keptIn(top); ok && !(keptFacts{a}).assignedIn(cont, loop) {
			return overwrite{why: fmt.Sprintf("%s keeps the output of every iteration of the loop at line %d", cont, t.StartPos(loop).Line+1), fixAt: top}, true
		}
	}
	names, assign := (keptFacts{a}).assignedNames(top)
	if len(names) == 0 {
		return overwrite{}, false
	}
	// for ...: y = f(x); outs.append(y)
	if loop >= 0 {
		inLoop := a.callsIn(loop)
		from := sort.Search(len(inLoop), func(i int) bool { return t.Start(inLoop[i].node) >= t.End(assign) })
		inLoop = inLoop[from:min(len(inLoop), from+maxScan)]
		for _, name := range names {
			for _, ap := range inLoop {
				a.work++
				if !appendMethods[ap.callee] || len(ap.args) == 0 {
					continue
				}
				arg := ap.args[len(ap.args)-1]
				root := t.Unwrap(arg)
				for t.Kind(root) == syntax.KindSubscript || t.Kind(root) == syntax.KindAttribute {
					root = t.Unwrap(t.Child(root, rootField(t, root)))
				}
				if t.Kind(root) != syntax.KindIdentifier || t.Text(root) != t.Text(name) || (keptFacts{a}).holder(root) != t.Unwrap(arg) {
					continue
				}
				cont, ok := (keptFacts{a}).keptIn(arg)
				if !ok || (keptFacts{a}).assignedIn(cont, loop) {
					continue
				}
				fix := int32(-1)
				if len(names) == 1 {
					fix = arg
				}
				return overwrite{why: fmt.Sprintf("%s keeps %s, the output of every iteration of the loop at line %d", cont, t.Text(name), t.StartPos(loop).Line+1), fixAt: fix}, true
			}
		}
	}
	// y1 = f(x); y2 = f(x); use(y1); or y2 = g(x), g compiled with CUDA
	// graphs too: its run starts a new generation of the device's tree.
	from := sort.Search(len(x.calls), func(i int) bool { return t.Start(x.calls[i].call.node) >= t.End(assign) })
	for _, later := range x.calls[from:min(len(x.calls), from+maxScan)] {
		a.work++
		if later.call.node == call.node || later.call.fn != call.fn {
			continue
		}
		if x.pendingBackward(call, t.End(call.node), t.Start(later.call.node)) {
			return overwrite{}, false
		}
		if !later.h.same(hc.h) && x.passedTo(names, later.call) {
			return overwrite{}, false // fed into other compiled code: not judged (pytorch issue 122192)
		}
		for _, name := range names {
			read := (keptFacts{a}).readAfter(t.Text(name), t.End(later.call.node), call.fn, t.End(assign))
			if read < 0 {
				continue
			}
			fix := int32(-1)
			if len(names) == 1 {
				fix = top
			}
			ran := "ran the compiled code again"
			if !later.h.same(hc.h) {
				ran = fmt.Sprintf("ran other compiled code with CUDA graphs (%s, compiled at %s), which starts a new generation of the device's CUDA graph tree and frees the outputs of earlier runs",
					later.h.name, later.h.where(t))
			}
			return overwrite{why: fmt.Sprintf("%s is read at line %d, after the call at line %d %s", t.Text(name), t.StartPos(read).Line+1, t.StartPos(later.call.node).Line+1, ran), fixAt: fix}, true
		}
		break // only the next run matters: a later one comes after it
	}
	return overwrite{}, false
}

// rootField is the field of an attribute or subscript holding what it
// reads from.
func rootField(t *tree, n int32) syntax.Field {
	if t.Kind(n) == syntax.KindSubscript {
		return syntax.FieldValue
	}
	return syntax.FieldObject
}

// collectors turn a generator into a collection before reading any of it.
var collectors = map[string]bool{
	"list": true, "tuple": true, "torch.stack": true, "torch.cat": true, "torch.concat": true,
	"torch.vstack": true, "torch.hstack": true, "sorted": true,
}

// passedTo reports whether one of names is read in the arguments of
// call.
func (x *tl011) passedTo(names []int32, call *callInfo) bool {
	a, t := x.c.a, x.c.t
	if call.argList < 0 {
		return false
	}
	for _, name := range names {
		reads := (nameFacts{a}).readsOf(t.Text(name))
		if i := a.firstFrom(reads, t.Start(call.argList)); i < len(reads) && t.Start(reads[i]) < t.End(call.argList) {
			return true
		}
	}
	return false
}

// hotTargets lists each name a compile site with CUDA graphs is called
// by, with the binding that holds the compiled value.
func (c ruleTL011) hotTargets() []*hotName {
	var out []*hotName
	for _, s := range c.a.sites {
		c.a.work++
		cg := cudagraphDecision(c).cudagraphs(s)
		if !cg.on {
			continue
		}
		for i, name := range s.targets {
			if name == "" || slices.Index(s.targets, name) != i {
				continue
			}
			h := &hotName{name: name, site: s, cg: cg}
			h.bind, h.after = c.siteBinding(s, name)
			out = append(out, h)
		}
	}
	return out
}

// siteBinding returns the binding of name that holds what site s
// compiles, and whether s changes an object bound before it; -1 when
// name is not bound as a name there (an attribute).
func (c ruleTL011) siteBinding(s *compileSite, name string) (int32, bool) {
	a, t := c.a, c.t
	tbl := a.buf.Scopes()
	n := s.node
	for range 3 {
		a.work++
		p := t.Parent(n)
		if p < 0 {
			break
		}
		if k := t.Kind(p); k == syntax.KindParenthesizedExpression || k == syntax.KindCall && t.Field(n) == syntax.FieldFunction {
			n = p
			continue
		}
		if t.Kind(p) == syntax.KindAssignment && t.Field(n) == syntax.FieldRight {
			if l := t.Unwrap(t.Child(p, syntax.FieldLeft)); t.Kind(l) == syntax.KindIdentifier && t.Text(l) == name {
				return c.bindingAt(tbl, l), false
			}
		}
		if t.Kind(p) == syntax.KindDecorator {
			if dd := t.Parent(p); dd >= 0 && t.Kind(dd) == syntax.KindDecoratedDefinition {
				if def := t.Child(dd, syntax.FieldDefinition); def >= 0 {
					if id := t.Child(def, syntax.FieldName); id >= 0 && t.Text(id) == name {
						return c.bindingAt(tbl, id), false
					}
				}
			}
		}
		break
	}
	// model.compile(...), torch.compile(model.forward): the binding the
	// statement reads the module by.
	stmt := t.stmt[s.node]
	reads := (nameFacts{a}).readsOf(name)
	if i := a.firstFrom(reads, t.Start(stmt)); i < len(reads) && t.Start(reads[i]) < t.End(stmt) {
		return c.bindingAt(tbl, reads[i]), true
	}
	return -1, false
}

// bindingAt returns the binding identifier n binds or reads (pyscope's
// lookup), or -1.
func (c ruleTL011) bindingAt(tbl *pyscope.Table, n int32) int32 {
	c.a.work++
	occ, ok := tbl.OccurrenceOf(n)
	if !ok {
		return -1
	}
	if occ.Role == pyscope.RoleBind {
		return occ.Binding
	}
	return tbl.Lookup(c.t.Text(n), occ.Scope, uint32(c.t.Start(n)), nil).Binding
}

// callsOf returns the calls of compiled code with CUDA graphs, in source
// order, each with the name it is a call of: a name alone counts when
// it reads the compiled value's binding (not an earlier or later one, nor
// a local of a function that compiles nothing), an attribute by its name
// unless the call comes before the compile in the compile's own function.
// Each call is looked at once, and matched against at most maxScan sites
// of its name.
func (c ruleTL011) callsOf(hot []*hotName) []hotCall {
	a, t := c.a, c.t
	tbl := a.buf.Scopes()
	byName := map[string][]*hotName{}
	var names []string
	for _, h := range hot {
		if len(byName[h.name]) == 0 {
			names = append(names, h.name)
		}
		byName[h.name] = append(byName[h.name], h)
	}
	var out []hotCall
	for _, name := range names {
		hs := byName[name]
		for _, call := range a.callsNamed(name) {
			a.work++
			if call.qual == "torch.compile" {
				continue
			}
			callee := t.Unwrap(call.calleeNode)
			b := int32(-1)
			switch t.Kind(callee) {
			case syntax.KindIdentifier:
				if b = c.bindingAt(tbl, callee); b < 0 {
					continue
				}
			case syntax.KindAttribute:
			default:
				continue
			}
			for _, h := range hs[:min(len(hs), maxScan)] {
				a.work++
				if call.node == h.site.node {
					break
				}
				if b >= 0 && (h.bind < 0 || !c.sameValue(tbl, b, h.bind)) || (b < 0 || h.after) && c.eagerBefore(call, h.site) {
					continue
				}
				out = append(out, hotCall{call: call, h: h})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return t.Start(out[i].call.node) < t.Start(out[j].call.node) })
	return out
}

// sameValue reports whether a name read bound by binding b reads the
// compiled value of binding hot: the same binding, or, for one a function
// makes under "global" (litgpt's main compiles the module's next_token),
// any binding of that name in the scope it binds in, since the function
// replaces it there when it runs.
func (c ruleTL011) sameValue(tbl *pyscope.Table, b, hot int32) bool {
	if b < 0 {
		return false
	}
	if b == hot {
		return true
	}
	hb, bb := tbl.Binding(hot), tbl.Binding(b)
	return hb.Declared && bb.Scope == hb.Scope && bb.Name == hb.Name
}

// eagerBefore reports whether call runs before site compiles: earlier in
// the site's own function, and in no loop that also holds the site.
func (c ruleTL011) eagerBefore(call *callInfo, s *compileSite) bool {
	a, t := c.a, c.t
	if call.fn != s.fn || t.Start(call.node) >= t.Start(s.node) {
		return false
	}
	for l, k := t.loop[s.node], 0; l >= 0 && k < maxScan; l, k = t.loop[l], k+1 {
		a.work++
		if a.within(call.node, l) {
			return false
		}
	}
	return true
}

func (c ruleTL011) newTL011(calls []hotCall) *tl011 {
	x := &tl011{c: c.checker, calls: calls, grads: map[int32]*gradFacts{}}
	t := c.t
	for _, call := range c.a.calls {
		c.a.work++
		switch call.qual {
		case "torch.set_default_device", "torch.set_default_tensor_type":
			x.defaultDevice = true
		case "torch.device":
			p := t.Parent(call.node)
			if p >= 0 && t.Kind(p) == syntax.KindAsPattern {
				p = t.Parent(p)
			}
			if p >= 0 && t.Kind(p) == syntax.KindWithItem {
				x.defaultDevice = true
			}
		}
	}
	return x
}

// hotCalls returns the calls of compiled code with CUDA graphs and the
// facts TL011 keeps of them, made once per check.
func (c ruleTL011) hotCalls() *tl011 {
	if c.hot == nil {
		var calls []hotCall
		if hot := c.hotTargets(); len(hot) > 0 {
			calls = c.callsOf(hot)
		}
		c.hot = c.newTL011(c.withExternal(calls, true))
	}
	return c.hot
}

// calleeName is a callee as the workspace model names it: its chain of
// names (self.model), or a container's chain and "[…]" for an element
// (models[…]); "" for any other.
func (c ruleTL011) calleeName(n int32) string {
	t := c.t
	n = t.Unwrap(n)
	suffix := ""
	if t.Kind(n) == syntax.KindSubscript {
		n, suffix = t.Unwrap(t.Child(n, syntax.FieldValue)), "[…]"
	}
	text := t.ChainText(n)
	if text == "" {
		return ""
	}
	return text + suffix
}

// withExternal adds to calls, kept in source order, the buffer's calls
// that the workspace model found running compiled code made in another
// file (Options.ExternalCalls; only those with CUDA graphs when hot),
// each matched by its callee's span and text, one name per compile site
// and callee text. A call already in calls stays as it is.
func (c ruleTL011) withExternal(calls []hotCall, hot bool) []hotCall {
	exts := c.opts.ExternalCalls
	if len(exts) == 0 {
		return calls
	}
	a, t := c.a, c.t
	bySpan := map[pybuf.Span]*callInfo{}
	for _, call := range a.calls {
		a.work++
		bySpan[t.Span(call.calleeNode)] = call
	}
	taken := map[int32]bool{}
	for _, hc := range calls {
		taken[hc.call.node] = true
	}
	type key struct {
		path string
		at   pybuf.Pos
		name string
	}
	names := map[key]*hotName{}
	n := len(calls)
	for i := range exts {
		e := &exts[i]
		call := bySpan[e.Span]
		if hot && !e.CUDAGraphs || call == nil || taken[call.node] || c.calleeName(call.calleeNode) != e.Name {
			continue
		}
		taken[call.node] = true
		k := key{e.CompilePath, e.Compile.Start, e.Name}
		h := names[k]
		if h == nil {
			why := e.Why
			if why != "" {
				why += " (compiled at " + e.At + ")"
			}
			h = &hotName{name: e.Name, cg: cudagraphState{on: e.CUDAGraphs, why: why}, bind: -1, ext: e}
			names[k] = h
		}
		calls = append(calls, hotCall{call: call, h: h})
	}
	if len(calls) > n {
		sort.SliceStable(calls, func(i, j int) bool { return t.Start(calls[i].call.node) < t.Start(calls[j].call.node) })
	}
	return calls
}

// outputsOverwritten reports outputs of compiled code with CUDA graphs
// kept past the next run of such code (TL011).
func (c ruleTL011) outputsOverwritten() {
	check := c.overwriteCheck()
	if check < 0 {
		return
	}
	t := c.t
	x := c.hotCalls()
	if len(x.calls) == 0 {
		return
	}
	replay := c.silentReplays()
	for _, hc := range x.calls {
		if x.onCPU(hc.call) {
			continue
		}
		ow, ok := x.keptAcrossCalls(hc)
		if !ok {
			continue
		}
		h := hc.h
		fate := fmt.Sprintf("on a CUDA device %s then raises \"accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run\" (%s:%d) where it is read", c.torchName(), fileTrees, check+1)
		related := []Related{{File: fileTrees, Line: check, Message: c.files.text(fileTrees, check)}}
		if replay >= 0 {
			fate = fmt.Sprintf("on a CUDA device %s raises \"accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run\" (%s:%d) where it is read only if that run ended a warm-up or a recording (the first calls); once the graphs replay, it raises nothing and the output silently holds the later run's values (try_end_curr_execution, %s:%d)",
				c.torchName(), fileTrees, check+1, fileTrees, replay+1)
			related = append(related, Related{File: fileTrees, Line: replay, Message: "a replay ends the one before without marking its outputs: reading them raises nothing"})
		}
		d := Diagnostic{
			Code: CodeOutputOverwritten, Severity: SeverityWarning, Span: t.Span(hc.call.calleeNode),
			Message: fmt.Sprintf("%s turns on CUDA graphs, so each call of %s returns tensors in memory that the next run of compiled code with CUDA graphs reuses; %s: %s; clone the output outside the compiled code (torch.compiler.cudagraph_mark_step_begin() does not keep it alive)",
				h.cg.why, h.name, ow.why, fate),
			Related: append(related, h.compiledAt()...),
		}
		if ow.fixAt >= 0 && h.site != nil && c.returnsOneTensor(h.site) {
			end := t.EndPos(ow.fixAt)
			d.Fixes = append(d.Fixes, Fix{Title: "Clone the output (.clone())", Preferred: true,
				Edits: []Edit{{Span: pybuf.Span{Start: end, End: end}, NewText: ".clone()"}}})
		}
		c.add(d)
	}
}

// silentReplays is the line of the target's cudagraph_trees.py where a
// replay's path ends without freeing its outputs with the "overwritten"
// error (try_end_curr_execution, which calls no
// dealloc_current_path_weakrefs, while the warm-up's and the
// recording's ends do), or -1 when the target has no such shape.
func (c ruleTL011) silentReplays() int {
	def := c.files.find(fileTrees, 0, "def try_end_curr_execution(")
	if def < 0 || c.files.find(fileTrees, 0, "def dealloc_current_path_weakrefs(") < 0 {
		return -1
	}
	lines := c.files.file(fileTrees)
	for i := def + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "def ") {
			break
		}
		if strings.Contains(l, "dealloc_current_path_weakrefs(") {
			return -1
		}
	}
	return def
}

// returnsOneTensor reports whether the function a site compiles is one of
// the buffer's whose every return gives a single value (not a tuple, a
// list, a dict or None): what .clone() can be called on.
func (c ruleTL011) returnsOneTensor(s *compileSite) bool {
	a, t := c.a, c.t
	for s.inner != nil {
		s = s.inner
	}
	def := int32(-1)
	if s.kind != siteCall {
		return false
	}
	byName := func(name string) {
		if defs := a.funcs[name]; len(defs) == 1 {
			def = defs[0]
		}
	}
	switch {
	case s.call == nil: // @torch.compile
		byName(s.target())
	case len(s.call.args) > 0:
		if f := t.Unwrap(s.call.args[0]); t.Kind(f) == syntax.KindIdentifier {
			byName(t.Text(f))
		}
	default:
		if p := t.Parent(s.call.node); p >= 0 && t.Kind(p) == syntax.KindDecorator { // @torch.compile(...)
			byName(s.target())
		}
	}
	if def < 0 || len(a.returns[def]) == 0 {
		return false
	}
	for _, r := range a.returns[def] {
		switch t.Kind(t.Unwrap(r)) {
		case syntax.KindTuple, syntax.KindExpressionList, syntax.KindList, syntax.KindDictionary, syntax.KindSet, syntax.KindNone,
			syntax.KindListComprehension, syntax.KindDictionaryComprehension, syntax.KindSetComprehension:
			return false
		}
	}
	return true
}

// overwriteCheck is the line of the target's cudagraph_trees.py that
// reports an output overwritten by a later run, or -1.
func (c ruleTL011) overwriteCheck() int {
	return c.files.find(fileTrees, 0, "overwritten by a subsequent run")
}

// ruleTL011 is the TL011 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL011 struct{ *checker }

// holder walks up from expression n through what keeps referring to its
// storage (x[i], x.attr, x.view(...), parentheses) to the outermost such
// expression.
func (a keptFacts) holder(n int32) int32 {
	t := a.t
	for range 16 {
		a.work++
		p := t.Parent(n)
		switch {
		case p < 0:
			return n
		case t.Kind(p) == syntax.KindParenthesizedExpression:
		case t.Kind(p) == syntax.KindSubscript && t.Field(n) == syntax.FieldValue:
		case t.Kind(p) == syntax.KindAttribute && t.Field(n) == syntax.FieldObject:
			call := t.Parent(p)
			switch {
			case call >= 0 && t.Kind(call) == syntax.KindCall && t.Field(p) == syntax.FieldFunction:
				if !aliasingMethods[t.Text(t.Child(p, syntax.FieldAttribute))] {
					return n
				}
				p = call
			default: // out.logits: a field of an output object
			}
		default:
			return n
		}
		n = p
	}
	return n
}

// enclosingLoop returns the innermost for or while statement whose body
// holds n in n's own function, or -1.
func (a keptFacts) enclosingLoop(n int32) int32 {
	t := a.t
	l := t.loop[n]
	for k := 0; l >= 0 && k < maxScan; k++ {
		a.work++
		if kd := t.Kind(l); kd == syntax.KindForStatement || kd == syntax.KindWhileStatement {
			return l
		}
		l = t.loop[l]
	}
	return -1
}

// assignedIn reports whether name is assigned anywhere inside node n.
func (a keptFacts) assignedIn(name string, n int32) bool {
	t := a.t
	as := nameFacts(a).bindsOf(name)
	i := a.firstFrom(as, t.Start(n))
	return i < len(as) && t.Start(as[i]) < t.End(n)
}

// keptIn reports the container that expression h is stored into, when h
// is an argument of container.append(...) or assigned to container[...].
func (a keptFacts) keptIn(h int32) (container string, ok bool) {
	t := a.t
	p := t.Parent(h)
	switch {
	case p >= 0 && t.Kind(p) == syntax.KindArgumentList:
		call := t.Parent(p)
		f := t.Child(call, syntax.FieldFunction)
		if t.Kind(f) != syntax.KindAttribute || !appendMethods[t.Text(t.Child(f, syntax.FieldAttribute))] {
			return "", false
		}
		obj := t.Unwrap(t.Child(f, syntax.FieldObject))
		if t.Chain(obj) == nil {
			return "", false
		}
		return t.Text(obj), true
	case p >= 0 && t.Kind(p) == syntax.KindAssignment && t.Field(h) == syntax.FieldRight:
		l := t.Unwrap(t.Child(p, syntax.FieldLeft))
		if t.Kind(l) != syntax.KindSubscript {
			return "", false
		}
		obj := t.Unwrap(t.Child(l, syntax.FieldValue))
		if t.Chain(obj) == nil {
			return "", false
		}
		return t.Text(obj), true
	}
	return "", false
}

// assignedNames returns the names an assignment whose right side is h
// binds (y = h, y, z = h), and the assignment; nil when h is not one.
func (a keptFacts) assignedNames(h int32) ([]int32, int32) {
	t := a.t
	p := t.Parent(h)
	if p < 0 || t.Kind(p) != syntax.KindAssignment || t.Field(h) != syntax.FieldRight {
		return nil, -1
	}
	l := t.Unwrap(t.Child(p, syntax.FieldLeft))
	switch t.Kind(l) {
	case syntax.KindIdentifier:
		return []int32{l}, p
	case syntax.KindPatternList, syntax.KindTuplePattern, syntax.KindTuple, syntax.KindExpressionList:
		var out []int32
		for _, c := range t.CodeChildren(l) {
			if t.Kind(c) == syntax.KindIdentifier {
				out = append(out, c)
			}
		}
		return out, p
	}
	return nil, -1
}

// readAfter returns the first read of name in function fn (or the module,
// fn < 0) at or after offset from, when name is not assigned again
// between since and that read; -1 when there is none.
func (a keptFacts) readAfter(name string, from int, fn int32, since int) int32 {
	t := a.t
	reads := nameFacts(a).readsOf(name)
	first := int32(-1)
	i := a.firstFrom(reads, from)
	for _, id := range reads[i:min(len(reads), i+maxScan)] {
		a.work++
		if t.fnOf[id] == fn {
			first = id
			break
		}
	}
	if first < 0 {
		return -1
	}
	as := nameFacts(a).bindsOf(name)
	j := a.firstFrom(as, since+1)
	for k, n := range as[j:] {
		a.work++
		if t.Start(n) >= t.Start(first) {
			break
		}
		if k >= maxScan || t.fnOf[n] == fn {
			return -1 // assigned again before the read (or too many to tell)
		}
	}
	return first
}

// keptFacts are the analysis's facts of one family: where a compiled call's outputs are kept, and read again. They read
// and fill the analysis they embed; the rules read them.
type keptFacts struct{ *analysis }
