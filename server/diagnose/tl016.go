package diagnose

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// TL016: compiled code with CUDA graphs called again and again with grad
// mode on, on a module whose parameters require grad (or inputs that
// do), while its outputs stay alive and no backward runs: every forward
// leaves a backward pending, so CUDA graph trees start no new generation
// (can_start_new_generation), record a new node under the last one on
// every call instead of replaying, and warn "Unable to hit fast path of
// CUDAGraphs because of pending, uninvoked backwards" (pytorch issue
// 176846). An eval loop over a model compiled for training, without
// torch.no_grad(), is the shape users meet.

// pendingLines are the lines of the target's cudagraph_trees.py the
// hazard rests on: the warning, where a forward's run marks its backward
// pending, and where a pending backward keeps the next generation from
// starting (-1 when absent). ok is false when the target has no such
// mechanism.
func (c ruleTL016) pendingLines() (warn, pending, gen int, ok bool) {
	warn = c.files.find(fileTrees, 0, "pending, uninvoked backwards")
	pending = c.files.find(fileTrees, 0, "running_forwards_with_pending_backwards = True")
	if warn < 0 || pending < 0 {
		return -1, -1, -1, false
	}
	gen = c.files.find(fileTrees, 0, "return not self.running_forwards_with_pending_backwards")
	return warn, pending, gen, true
}

// pendingBackwards reports compiled code with CUDA graphs whose repeated
// forwards leave their backwards pending (TL016).
func (c ruleTL016) pendingBackwards() {
	warn, pending, gen, ok := c.pendingLines()
	if !ok {
		return
	}
	x := ruleTL011(c).hotCalls()
	if len(x.calls) == 0 {
		return
	}
	t := c.t
	modules := map[*hotName]string{}
	frozen := -1 // freezesGrad, asked once a call is found
	for _, hc := range x.calls {
		call := hc.call
		if !c.outputKept(call) {
			continue
		}
		why, ok := modules[hc.h]
		if !ok {
			why = c.moduleSite(hc.h)
			modules[hc.h] = why
		}
		if why == "" {
			why = c.inputRequiresGrad(call)
		}
		if why == "" || x.gradOff(call.node) {
			continue
		}
		loop, via, ok := c.repeated(x, call)
		if !ok {
			continue
		}
		if frozen < 0 {
			frozen = 0
			if c.freezesGrad() {
				frozen = 1
			}
		}
		if frozen == 1 {
			return
		}
		where := fmt.Sprintf("the loop at line %d", t.StartPos(loop).Line+1)
		if via != nil {
			where = fmt.Sprintf("%s, called in the loop at line %d,", oneLineText(t.Text(via.calleeNode), 32), t.StartPos(loop).Line+1)
		}
		d := Diagnostic{
			Code: CodePendingBackward, Severity: SeverityWarning, Span: t.Span(call.calleeNode),
			Message: fmt.Sprintf("%s turns on CUDA graphs, and %s calls %s again and again with grad mode on (%s) while no backward runs and its output stays alive: in %s every such forward leaves its backward pending, so CUDA graph trees start no new generation and record a new graph on each call instead of replaying one (\"Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards\", %s:%d); run the loop under torch.no_grad() or torch.inference_mode(), or call torch.compiler.cudagraph_mark_step_begin() before each call",
				hc.h.cg.why, where, hc.h.name, why, c.torchName(), fileTrees, warn+1),
			Related: []Related{
				{File: fileTrees, Line: warn, Message: c.files.text(fileTrees, warn)},
				{File: fileTrees, Line: pending, Message: "a forward's run leaves its backward pending"},
			},
		}
		if gen >= 0 {
			d.Related = append(d.Related, Related{File: fileTrees, Line: gen, Message: "a pending backward keeps the next generation from starting"})
		}
		d.Related = append(d.Related, hc.h.compiledAt()...)
		if via == nil {
			if fix, ok := c.wrapNoGrad(loop); ok {
				d.Fixes = append(d.Fixes, fix)
			}
		}
		c.add(d)
	}
}

// requiresGradOff is an assignment that turns a tensor's requires_grad
// off.
var requiresGradOff = regexp.MustCompile(`\.requires_grad\s*=\s*False`)

// freezesGrad reports whether the file turns requires_grad off anywhere
// (p.requires_grad = False, m.requires_grad_(False)) or grad mode off
// for the rest of the run (torch.set_grad_enabled(False) as a
// statement): which parameters still need grad is not guessed then.
func (c ruleTL016) freezesGrad() bool {
	a, t := c.a, c.t
	for _, call := range a.calls {
		a.work++
		args := call.args
		if (call.callee == "requires_grad_" || call.qual == "torch.set_grad_enabled" || call.qual == "torch._C._set_grad_enabled") &&
			len(args) == 1 && t.Kind(t.Unwrap(args[0])) != syntax.KindTrue {
			return true
		}
	}
	return requiresGradOff.Match(t.src)
}

// itForward starts what moduleSite says of a module's forward.
const itForward = "it is a module's forward"

// moduleSite says why the calls of h's compiled value record a
// backward when it is a module (its parameters require grad), or "". A
// value compiled in another file is one when the workspace model says
// so (ExternalCall.Module, Forward).
func (c ruleTL016) moduleSite(h *hotName) string {
	t := c.t
	isModule, forward := h.name+" is a module: its parameters require grad", itForward+": the module's parameters require grad"
	if e := h.ext; e != nil {
		switch {
		case e.Forward:
			return forward
		case e.Module:
			return isModule
		}
		return ""
	}
	s := h.site
	switch {
	case s.kind == siteInPlace:
		return isModule
	case s.kind == siteCall && s.call != nil && len(s.call.args) > 0:
		arg := t.Unwrap(s.call.args[0])
		if t.Kind(arg) == syntax.KindAttribute && t.LastName(arg) == "forward" {
			return forward
		}
		if c.moduleValue(arg) {
			return isModule
		}
	case s.kind == siteCall && c.decoratesForward(s):
		return forward
	}
	return ""
}

// inputRequiresGrad says which argument of call was made with
// requires_grad=True (by its name's last assignment before the call, in
// the call's function), or "".
func (c ruleTL016) inputRequiresGrad(call *callInfo) string {
	a, t := c.a, c.t
	for _, arg := range call.args {
		arg = t.Unwrap(arg)
		if t.Kind(arg) != syntax.KindIdentifier {
			continue
		}
		// The name's last binding before the call, in the call's function.
		as := (nameFacts{a}).bindsOf(t.Text(arg))
		i := a.firstFrom(as, t.Start(call.node)) - 1
		if i < 0 || t.Kind(as[i]) != syntax.KindAssignment || t.fnOf[as[i]] != call.fn {
			continue
		}
		if r := t.Child(as[i], syntax.FieldRight); r >= 0 && c.requiresGrad(r) {
			return fmt.Sprintf("%s requires grad (line %d)", t.Text(arg), t.StartPos(as[i]).Line+1)
		}
	}
	return ""
}

// requiresGrad reports whether expression n makes a tensor that requires
// grad: a call with requires_grad=True, or .requires_grad_().
func (c ruleTL016) requiresGrad(n int32) bool {
	a, t := c.a, c.t
	for _, call := range a.callsIn(n) {
		a.work++
		if call.callee == "requires_grad_" && (len(call.args) == 0 || t.Kind(t.Unwrap(call.args[0])) == syntax.KindTrue) {
			return true
		}
		if kw, ok := call.keyword("requires_grad", t); ok && t.Kind(t.Unwrap(kw.value)) == syntax.KindTrue {
			return true
		}
	}
	return false
}

// moduleValue reports whether expression n holds an nn.Module: torch.nn's
// own (not its functional API), a class of the file deriving from a
// Module, or a pretrained model (X.from_pretrained(...)), through names
// assigned once and the methods that return the module (.cuda(), .to()).
func (c ruleTL016) moduleValue(n int32) bool {
	a, t := c.a, c.t
	v := c.valueBefore(n)
	for i := 0; i < 8 && t.Kind(v) == syntax.KindCall; i++ {
		a.work++
		fn := t.Unwrap(t.Child(v, syntax.FieldFunction))
		if t.Kind(fn) == syntax.KindAttribute && moduleMethods[t.LastName(fn)] && t.LastName(fn) != "requires_grad_" {
			v = c.valueBefore(t.Child(fn, syntax.FieldObject))
			continue
		}
		q := a.chainQual(fn)
		switch {
		case strings.HasPrefix(q, "torch.nn.") && !strings.HasPrefix(q, "torch.nn.functional.") && !strings.HasPrefix(q, "torch.nn.init."):
			return true
		case t.Kind(fn) == syntax.KindAttribute && t.LastName(fn) == "from_pretrained":
			return true
		case t.Kind(fn) == syntax.KindIdentifier:
			return c.moduleClass(t.Text(fn))
		}
		return false
	}
	return false
}

// valueBefore is what expression n holds: a name assigned once, resolved;
// a name assigned again and again, its last assignment before n's
// statement in n's function (model = torch.compile(model): the argument
// is the module assigned before, not the compiled value).
func (c ruleTL016) valueBefore(n int32) int32 {
	a, t := c.a, c.t
	u := t.Unwrap(n)
	v := t.Unwrap(a.resolve(u))
	if v != u || u < 0 || t.Kind(u) != syntax.KindIdentifier {
		return v
	}
	as := (nameFacts{a}).bindsOf(t.Text(u))
	i := a.firstFrom(as, t.Start(t.stmt[u])) - 1
	if i < 0 || t.Kind(as[i]) != syntax.KindAssignment || t.fnOf[as[i]] != t.fnOf[u] {
		return v
	}
	if r := t.Child(as[i], syntax.FieldRight); r >= 0 && t.Kind(t.Child(as[i], syntax.FieldLeft)) == syntax.KindIdentifier {
		return t.Unwrap(a.resolve(t.Unwrap(r)))
	}
	return v
}

// moduleClass reports whether the file defines one class of that name
// deriving from something named Module (nn.Module, torch.nn.Module,
// LightningModule, a Module of its own).
func (c ruleTL016) moduleClass(name string) bool {
	a, t := c.a, c.t
	found := 0
	module := false
	for _, cls := range a.classes {
		a.work++
		if id := t.Child(cls, syntax.FieldName); id < 0 || t.Text(id) != name {
			continue
		}
		found++
		if sup := t.Child(cls, syntax.FieldSuperclasses); sup >= 0 {
			for _, b := range t.CodeChildren(sup) {
				if b = t.Unwrap(b); t.Chain(b) != nil && strings.HasSuffix(t.LastName(b), "Module") {
					module = true
				}
			}
		}
	}
	return found == 1 && module
}

// decoratesForward reports whether site s decorates a method named
// forward of a class deriving from a Module.
func (c ruleTL016) decoratesForward(s *compileSite) bool {
	t := c.t
	dec := t.Parent(s.node)
	if dec >= 0 && t.Kind(dec) != syntax.KindDecorator {
		dec = t.Parent(dec)
	}
	if dec < 0 || t.Kind(dec) != syntax.KindDecorator {
		return false
	}
	dd := t.Parent(dec)
	def := t.Child(dd, syntax.FieldDefinition)
	if def < 0 || t.Text(t.Child(def, syntax.FieldName)) != "forward" {
		return false
	}
	for p := t.Parent(dd); p >= 0; p = t.Parent(p) {
		if t.Kind(p) == syntax.KindClassDefinition {
			id := t.Child(p, syntax.FieldName)
			return id >= 0 && c.moduleClass(t.Text(id))
		}
	}
	return false
}

// outputKept reports whether the call's output is bound to a name or
// kept in a container: alive when the next call runs, so its graph's
// node cannot be dropped.
func (c ruleTL016) outputKept(call *callInfo) bool {
	a, t := c.a, c.t
	if p := t.Parent(call.node); p >= 0 && t.Kind(p) == syntax.KindArgumentList {
		// f(compiled(x)): kept only by an append.
		f := t.Child(t.Parent(p), syntax.FieldFunction)
		if f < 0 || t.Kind(f) != syntax.KindAttribute || !appendMethods[t.LastName(f)] {
			return false
		}
	}
	top := (keptFacts{a}).holder(call.node)
	if names, _ := (keptFacts{a}).assignedNames(top); len(names) > 0 {
		return true
	}
	_, ok := (keptFacts{a}).keptIn(top)
	return ok
}

// repeated returns the loop that calls call again and again: one around
// it in its own function, or one around a call of that function (via) in
// the file, with grad mode on there too. Neither loop, nor the functions
// holding them, may run a backward or mark CUDA graph steps.
func (c ruleTL016) repeated(x *tl011, call *callInfo) (loop int32, via *callInfo, ok bool) {
	a, t := c.a, c.t
	if c.runsBackward(call.fn) {
		return -1, nil, false
	}
	if l := (keptFacts{a}).enclosingLoop(call.node); l >= 0 {
		return l, nil, true
	}
	if call.fn < 0 {
		return -1, nil, false
	}
	name := t.Text(t.Child(call.fn, syntax.FieldName))
	if name == "" {
		return -1, nil, false
	}
	for _, caller := range a.callsNamed(name) {
		a.work++
		l := (keptFacts{a}).enclosingLoop(caller.node)
		if l < 0 || x.gradOff(caller.node) || c.runsBackward(caller.fn) || c.loopRunsBackward(l) {
			continue
		}
		if len(a.funcs[name]) != 1 {
			return -1, nil, false
		}
		return l, caller, true
	}
	return -1, nil, false
}

// backwardCallee reports whether call runs a backward or marks a CUDA
// graph step: x.backward(), manual_backward, accelerator.backward,
// torch.autograd.grad, torch.compiler.cudagraph_mark_step_begin().
func backwardCallee(call *callInfo) bool {
	return strings.Contains(strings.ToLower(call.callee), "backward") ||
		call.qual == "torch.autograd.grad" || call.qual == "torch.autograd.backward" ||
		call.callee == "cudagraph_mark_step_begin" || call.callee == "mark_step_begin"
}

// runsBackward reports whether function fn (-1: the module's own
// statements, and then any function) runs a backward, directly or
// through a function of the file it calls.
func (c ruleTL016) runsBackward(fn int32) bool {
	a := c.a
	calls := a.calls
	if fn >= 0 {
		calls = a.callsIn(fn)
	}
	return c.anyBackward(calls, 1)
}

// loopRunsBackward reports whether loop l runs a backward, directly or
// through a function of the file it calls.
func (c ruleTL016) loopRunsBackward(l int32) bool {
	return c.anyBackward(c.a.callsIn(l), 1)
}

func (c ruleTL016) anyBackward(calls []*callInfo, depth int) bool {
	a := c.a
	for _, call := range calls[:min(len(calls), 4*maxScan)] {
		a.work++
		if backwardCallee(call) {
			return true
		}
		if depth > 0 {
			for _, def := range a.funcs[call.callee] {
				if c.anyBackward(a.callsIn(def), depth-1) {
					return true
				}
			}
		}
	}
	return len(calls) > 4*maxScan // too many to tell: say it might
}

// wrapNoGrad wraps loop in "with torch.no_grad():", re-indenting its
// lines, where that edit is plain: the loop starts its line, is indented
// with spaces, holds no string spanning lines, and the file imports
// torch by that name.
func (c ruleTL016) wrapNoGrad(loop int32) (Fix, bool) {
	a, t := c.a, c.t
	if _, ok := a.moduleImports()["torch"]; !ok {
		return Fix{}, false
	}
	start := t.StartPos(loop)
	first := t.line(start.Line)
	indent := first[:min(start.Col, len(first))]
	if strings.TrimLeft(indent, " ") != "" {
		return Fix{}, false
	}
	text := t.Text(loop)
	if strings.Contains(text, `"""`) || strings.Contains(text, "'''") || strings.Contains(text, "\t") || strings.Contains(text, "\\\n") {
		return Fix{}, false
	}
	lines := strings.Split(text, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			lines[i] = "    " + lines[i]
		}
	}
	return Fix{
		Title:     "Run the loop under torch.no_grad()",
		Preferred: true,
		Edits: []Edit{{Span: pybuf.Span{Start: start, End: t.EndPos(loop)},
			NewText: "with torch.no_grad():\n" + indent + "    " + strings.Join(lines, "\n")}},
	}, true
}

// ruleTL016 is the TL016 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL016 struct{ *checker }
