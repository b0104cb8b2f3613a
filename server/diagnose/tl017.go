package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// TL017: the first call of compiled code made inside a manual CUDA graph
// capture (with torch.cuda.graph(g): y = compiled(x)): Dynamo and
// Inductor compile on that call, and what they do then (reading the RNG
// state, copying to the GPU, allocating) is not permitted while the
// stream captures: "operation not permitted when stream is capturing",
// "Cannot call CUDAGeneratorImpl::current_seed during CUDA graph
// capture", or a graph that replays wrong (pytorch issues 131782,
// 185074). torch.cuda.make_graphed_callables warms its callables up
// before it captures them, unless told to take no warm-up iterations.

const fileGraphs = "torch/cuda/graphs.py"

// captureLines are the lines of the target's torch/cuda/graphs.py: the
// graph context manager and the capture it begins; -1 when absent.
func (c ruleTL017) captureLines() (class, begin int) {
	class = c.files.findStatement(fileGraphs, 0, "class", "class graph")
	if class < 0 {
		return -1, -1
	}
	return class, c.files.find(fileGraphs, class, "capture_begin(")
}

// graphedLines are the lines of the target's make_graphed_callables: its
// def, its warm-up loop (-1 when it warms nothing up) and its capture.
func (c ruleTL017) graphedLines() (def, warmup, capture int) {
	def = c.files.findStatement(fileGraphs, 0, "def", "def make_graphed_callables(")
	if def < 0 {
		return -1, -1, -1
	}
	// The typing overloads come first: the body is the last def.
	for next := def; next >= 0; next = c.files.findStatement(fileGraphs, next+1, "def", "def make_graphed_callables(") {
		def = next
	}
	return def, c.files.find(fileGraphs, def, "range(num_warmup_iters)"), c.files.find(fileGraphs, def, "with torch.cuda.graph(")
}

// compiledNames lists each name a compile site is called by, with the
// binding that holds the compiled value, CUDA graphs or not.
func (c ruleTL017) compiledNames() []*hotName {
	var out []*hotName
	for _, s := range c.a.sites {
		c.a.work++
		cg := cudagraphDecision(c).cudagraphs(s)
		for i, name := range s.targets {
			if name == "" || slices.Index(s.targets, name) != i {
				continue
			}
			h := &hotName{name: name, site: s, cg: cg}
			h.bind, h.after = ruleTL011(c).siteBinding(s, name)
			out = append(out, h)
		}
	}
	return out
}

// captureBody returns the body of the with statement that call
// (torch.cuda.graph(...)) opens, or -1.
func (c ruleTL017) captureBody(call *callInfo) (with, body int32) {
	t := c.t
	p := t.Parent(call.node)
	if p >= 0 && t.Kind(p) == syntax.KindAsPattern {
		p = t.Parent(p)
	}
	if p < 0 || t.Kind(p) != syntax.KindWithItem {
		return -1, -1
	}
	for w := t.Parent(p); w >= 0; w = t.Parent(w) {
		if t.Kind(w) == syntax.KindWithStatement {
			return w, t.Child(w, syntax.FieldBody)
		}
	}
	return -1, -1
}

// firstCallsInCapture reports compiled code first called inside a
// manual CUDA graph capture (TL017).
func (c ruleTL017) firstCallsInCapture() {
	a, t := c.a, c.t
	class, begin := c.captureLines()
	def, warmup, capture := c.graphedLines()
	if class < 0 && def < 0 {
		return
	}
	var captures, graphed []*callInfo
	for _, call := range append(append([]*callInfo(nil), a.callsNamed("graph")...), a.callsNamed("make_graphed_callables")...) {
		a.work++
		switch call.qual {
		case "torch.cuda.graph", "torch.cuda.graphs.graph":
			if class >= 0 {
				captures = append(captures, call)
			}
		case "torch.cuda.make_graphed_callables", "torch.cuda.graphs.make_graphed_callables":
			if def >= 0 {
				graphed = append(graphed, call)
			}
		}
	}
	if len(captures) == 0 && len(graphed) == 0 {
		return
	}
	c.globalCapturesWithThreads(captures, class)
	names := c.compiledNames()
	if len(names) == 0 && len(c.opts.ExternalCalls) == 0 {
		return
	}
	var calls []hotCall
	if len(names) > 0 {
		calls = ruleTL011(c).callsOf(names)
	}
	calls = ruleTL011(c).withExternal(calls, false)
	var bodies []int32
	for _, cap := range captures {
		if _, body := c.captureBody(cap); body >= 0 {
			bodies = append(bodies, body)
		}
	}
	inCapture := func(n int32) bool {
		for _, b := range bodies {
			if a.within(n, b) {
				return true
			}
		}
		return false
	}
	for _, cap := range captures {
		with, body := c.captureBody(cap)
		if body < 0 {
			continue
		}
		reported := map[*hotName]bool{}
		for _, hc := range calls {
			a.work++
			if !a.within(hc.call.node, body) || hc.call.fn != cap.fn || reported[hc.h] || c.warmedUp(hc.h, calls, with, cap.fn, inCapture) {
				continue
			}
			reported[hc.h] = true
			d := Diagnostic{
				Code: CodeFirstCallInCapture, Severity: SeverityWarning, Span: t.Span(hc.call.calleeNode),
				Message: fmt.Sprintf("%s is compiled (%s) and first called here, inside the CUDA graph capture of line %d: torch.compile compiles on the first call, and what it does then (reading the RNG state, copying to the GPU, allocating) is not permitted while the stream captures: \"operation not permitted when stream is capturing\", or a graph that replays wrong results (pytorch issues 131782, 185074); call it once before the capture to compile it (a warm-up)",
					hc.h.name, hc.h.where(t), t.StartPos(with).Line+1),
				Related: []Related{{File: fileGraphs, Line: class, Message: c.files.text(fileGraphs, class)}},
			}
			if begin >= 0 {
				d.Related = append(d.Related, Related{File: fileGraphs, Line: begin, Message: "the capture begins as the with statement enters"})
			}
			d.Related = append(d.Related, hc.h.compiledAt()...)
			if fix, ok := c.warmUpFix(hc.call, with, body); ok {
				d.Fixes = append(d.Fixes, fix)
			}
			c.add(d)
		}
	}
	for _, g := range graphed {
		c.graphedCompiled(g, names, calls, def, warmup, capture)
	}
}

// warmedUp reports whether h's compiled value is called, or handed to
// another function, before the capture of with statement w: a call
// outside every capture that is not after w in w's own function, or the
// value passed as an argument anywhere (a warm-up helper is not told
// apart). A value compiled in another file and called in a file other
// than the buffer too is taken as warmed up there.
func (c ruleTL017) warmedUp(h *hotName, calls []hotCall, w, fn int32, inCapture func(int32) bool) bool {
	a, t := c.a, c.t
	if h.ext != nil && h.ext.CalledElsewhere {
		return true
	}
	for _, hc := range calls {
		a.work++
		if hc.h != h || inCapture(hc.call.node) {
			continue
		}
		if hc.call.fn != fn || t.Start(hc.call.node) < t.Start(w) {
			return true
		}
		for l := t.loop[w]; l >= 0; l = t.loop[l] {
			if a.within(hc.call.node, l) {
				return true // a later call in a loop that also holds the capture
			}
		}
	}
	for _, r := range (nameFacts{a}).readsOf(h.name) {
		a.work++
		if p := t.Parent(r); p >= 0 && (t.Kind(p) == syntax.KindArgumentList || t.Kind(p) == syntax.KindKeywordArgument) {
			if call := t.Parent(p); t.Kind(p) == syntax.KindArgumentList && call >= 0 && strings.HasSuffix(c.a.chainQual(t.Child(call, syntax.FieldFunction)), "make_graphed_callables") {
				continue
			}
			return true
		}
	}
	return false
}

// warmUpFix inserts the same call on its own line before the with
// statement, where that is plain: the call is on one line, its arguments
// read nothing the capture binds, and the with statement starts its line
// and opens nothing but the capture (a warm-up outside another context,
// torch.no_grad() say, would compile for another grad mode).
func (c ruleTL017) warmUpFix(call *callInfo, with, body int32) (Fix, bool) {
	a, t := c.a, c.t
	text := t.Text(call.node)
	if strings.Contains(text, "\n") || call.argList < 0 {
		return Fix{}, false
	}
	items := 0
	for _, cl := range t.CodeChildren(with) {
		if t.Kind(cl) == syntax.KindWithClause {
			items += len(t.CodeChildren(cl))
		}
	}
	if items != 1 {
		return Fix{}, false
	}
	start := t.StartPos(with)
	first := t.line(start.Line)
	indent := first[:min(start.Col, len(first))]
	if strings.TrimLeft(indent, " \t") != "" {
		return Fix{}, false
	}
	if len(call.splats) > 0 {
		return Fix{}, false
	}
	args := append([]int32(nil), call.args...)
	for _, kw := range call.kwargs {
		args = append(args, kw.value)
	}
	for _, arg := range args {
		a.work++
		root := t.Unwrap(arg)
		for t.Kind(root) == syntax.KindAttribute {
			root = t.Unwrap(t.Child(root, syntax.FieldObject))
		}
		if t.Kind(root) != syntax.KindIdentifier {
			if t.literalKind(root) == "" {
				return Fix{}, false
			}
			continue
		}
		as := (nameFacts{a}).bindsOf(t.Text(root))
		if i := a.firstFrom(as, t.Start(body)); i < len(as) && t.Start(as[i]) < t.Start(call.node) {
			return Fix{}, false
		}
	}
	at := pybuf.Pos{Line: start.Line}
	return Fix{
		Title:     "Warm the compiled code up before the capture (" + oneLineText(text, 40) + ")",
		Preferred: true,
		Edits:     []Edit{{Span: pybuf.Span{Start: at, End: at}, NewText: indent + text + "\n"}},
	}, true
}

// graphedCompiled reports compiled code handed to make_graphed_callables
// without a warm-up: the target's make_graphed_callables warms its
// callables up first (num_warmup_iters, 3 by default) unless it has no
// warm-up loop or is told to take none.
func (c ruleTL017) graphedCompiled(g *callInfo, names []*hotName, calls []hotCall, def, warmup, capture int) {
	a, t := c.a, c.t
	iters := "its default"
	if kw, ok := g.keyword("num_warmup_iters", t); ok {
		if t.Text(t.Unwrap(kw.value)) != "0" {
			return
		}
		iters = "num_warmup_iters=0"
	} else if warmup >= 0 {
		return
	}
	if len(g.args) == 0 {
		return
	}
	arg := t.Unwrap(g.args[0])
	var elems []int32
	switch t.Kind(arg) {
	case syntax.KindTuple, syntax.KindList:
		elems = t.CodeChildren(arg)
	default:
		elems = []int32{arg}
	}
	tbl := a.buf.Scopes()
	for _, e := range elems {
		e = t.Unwrap(e)
		if t.Kind(e) != syntax.KindIdentifier {
			continue
		}
		b := ruleTL011(c).bindingAt(tbl, e)
		for _, h := range names {
			a.work++
			if h.name != t.Text(e) || h.bind < 0 || !ruleTL011(c).sameValue(tbl, b, h.bind) {
				continue
			}
			if c.calledBefore(h, calls, g) {
				break
			}
			d := Diagnostic{
				Code: CodeFirstCallInCapture, Severity: SeverityWarning, Span: t.Span(e),
				Message: fmt.Sprintf("%s is compiled (line %d) and never called before make_graphed_callables, which with %s warms nothing up and so makes its first call inside the CUDA graph capture: torch.compile compiles on the first call, which is not permitted while the stream captures (pytorch issues 131782, 185074); call it once before, or let make_graphed_callables warm it up",
					h.name, t.StartPos(h.site.node).Line+1, iters),
				Related: []Related{{File: fileGraphs, Line: def, Message: c.files.text(fileGraphs, def)}},
			}
			if warmup >= 0 {
				d.Related = append(d.Related, Related{File: fileGraphs, Line: warmup, Message: "the warm-up calls, num_warmup_iters times"})
			}
			if capture >= 0 {
				d.Related = append(d.Related, Related{File: fileGraphs, Line: capture, Message: "the capture of each callable's forward"})
			}
			c.add(d)
			break
		}
	}
}

// calledBefore reports whether h's value is called before call g in g's
// function, or anywhere in another function.
func (c ruleTL017) calledBefore(h *hotName, calls []hotCall, g *callInfo) bool {
	t := c.t
	for _, hc := range calls {
		if hc.h == h && (hc.call.fn != g.fn || t.Start(hc.call.node) < t.Start(g.node)) {
			return true
		}
	}
	return false
}

// ruleTL017 is the TL017 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL017 struct{ *checker }
