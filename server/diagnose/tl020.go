package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// TL020: gradients accumulated across the backward runs of a module
// compiled with CUDA graphs. Each parameter's .grad is an output of the
// last backward's CUDA graph; the next replay overwrites that memory, and
// the next backward, accumulating into .grad, reads it: "accessing tensor
// output of CUDAGraphs that has been overwritten by a subsequent run"
// (measured on torch 2.11: a loop of forward and backward with no
// zero_grad fails at its second backward; with zero_grad(set_to_none=
// True) at each step it trains). Gradient accumulation over
// micro-batches, and a loop that forgets zero_grad, are the shapes.

// gradsAccumulated reports loops that run forwards and backwards of a
// module compiled with CUDA graphs without setting the gradients to None
// at every iteration (TL020).
func (c ruleTL020) gradsAccumulated() {
	check := ruleTL011(c).overwriteCheck()
	if check < 0 {
		return
	}
	x := ruleTL011(c).hotCalls()
	if len(x.calls) == 0 {
		return
	}
	a, t := c.a, c.t
	loops := c.backwardLoops()
	if len(loops) == 0 {
		return
	}
	modules := map[*hotName]string{}
	seen := map[int32]bool{}
	for _, hc := range x.calls {
		a.work++
		call := hc.call
		loop := int32(-1)
		for _, l := range loops {
			if a.within(call.node, l) && (loop < 0 || a.within(l, loop)) {
				loop = l
			}
		}
		if loop < 0 || seen[loop] || x.gradOff(call.node) {
			continue
		}
		why, ok := modules[hc.h]
		if !ok {
			why = ruleTL016(c).moduleSite(hc.h)
			modules[hc.h] = why
		}
		if why == "" || c.zeroesEachIteration(loop) {
			continue
		}
		seen[loop] = true
		how := "no zero_grad runs in it"
		if c.zeroesSometimes(loop) {
			how = "its zero_grad runs only on some iterations (gradient accumulation)"
		}
		d := Diagnostic{
			Code: CodeGradsAccumulated, Severity: SeverityWarning, Span: t.Span(call.calleeNode),
			Message: fmt.Sprintf("%s turns on CUDA graphs, and the loop at line %d runs %s's forward and a backward on every iteration while %s: each .grad is then an output of the last backward's CUDA graph, which the next replay overwrites, and the next backward accumulates into it: %s raises \"accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run\" (%s:%d) at the second backward (%s); set the gradients to None at every iteration (optimizer.zero_grad() or %s.zero_grad(), set_to_none=True being the default), or compile without CUDA graphs (mode=\"max-autotune-no-cudagraphs\") to accumulate",
				hc.h.cg.why, t.StartPos(loop).Line+1, hc.h.name, how, c.torchName(), fileTrees, check+1, why, hc.h.name),
			Related: []Related{{File: fileTrees, Line: check, Message: c.files.text(fileTrees, check)}},
		}
		d.Related = append(d.Related, hc.h.compiledAt()...)
		c.add(d)
	}
}

// backwardLoops are the loops that run a backward on their iterations:
// the innermost loop around each backward call, or around a call of a
// function of the file that runs one. Few in a file, and found without
// visiting the calls of compiled code.
func (c ruleTL020) backwardLoops() []int32 {
	a := c.a
	var loops []int32
	seen := map[int32]bool{}
	add := func(n int32) {
		if l := (keptFacts{a}).enclosingLoop(n); l >= 0 && !seen[l] {
			seen[l] = true
			loops = append(loops, l)
		}
	}
	// One pass over the calls, not counted as work: it is linear in them,
	// and the passes that are not are bounded by what they find.
	runs := map[string]bool{}
	for _, call := range a.calls {
		if !backwardCallee(call) {
			continue
		}
		add(call.node)
		if call.fn >= 0 {
			runs[c.t.Text(c.t.Child(call.fn, syntax.FieldName))] = true
		}
	}
	if len(runs) > 0 {
		for _, call := range a.calls {
			if runs[call.callee] && len(a.funcs[call.callee]) > 0 {
				add(call.node)
			}
		}
	}
	return loops
}

// zeroesEachIteration reports whether loop sets the gradients to None on
// every iteration: a zero_grad() call (or .grad = None) that no if, try
// or inner loop holds, in the loop's body or in a function of the file
// the body calls so.
func (c ruleTL020) zeroesEachIteration(loop int32) bool {
	a, t := c.a, c.t
	body := t.Child(loop, syntax.FieldBody)
	if body < 0 {
		return false
	}
	for _, call := range a.callsIn(body) {
		a.work++
		if !c.unconditional(call.node, body) {
			continue
		}
		if zeroGrad(call, t) {
			return true
		}
		for _, def := range a.funcs[call.callee] {
			fb := t.Child(def, syntax.FieldBody)
			for _, inner := range a.callsIn(def) {
				a.work++
				if fb >= 0 && zeroGrad(inner, t) && c.unconditional(inner.node, fb) {
					return true
				}
			}
			if fb >= 0 && c.gradNone(fb) {
				return true
			}
		}
	}
	return c.gradNone(body)
}

// zeroesSometimes reports whether loop calls zero_grad at all (under an
// if, say: every k-th iteration).
func (c ruleTL020) zeroesSometimes(loop int32) bool {
	for _, call := range c.a.callsIn(loop) {
		if zeroGrad(call, c.t) {
			return true
		}
	}
	return false
}

// zeroGrad reports a zero_grad() call that sets the gradients to None:
// not one given set_to_none=False (which zeroes .grad in place).
func zeroGrad(call *callInfo, t *tree) bool {
	if call.callee != "zero_grad" {
		return false
	}
	if kw, ok := call.keyword("set_to_none", t); ok && strings.TrimSpace(t.Text(kw.value)) != "True" {
		return false
	}
	return true
}

// gradNone reports an assignment of None to a .grad that no if, try or
// inner loop of block holds (p.grad = None).
func (c ruleTL020) gradNone(block int32) bool {
	t := c.t
	var walk func(n int32, depth int) bool
	walk = func(n int32, depth int) bool {
		c.a.work++
		if depth > 64 {
			return false
		}
		if t.Kind(n) == syntax.KindAssignment {
			left, right := t.Child(n, syntax.FieldLeft), t.Child(n, syntax.FieldRight)
			// A loop over the parameters is the usual way to write it:
			// one inner for is allowed.
			if left >= 0 && right >= 0 && strings.HasSuffix(t.Text(left), ".grad") && t.Text(right) == "None" &&
				c.unconditionalOrParamLoop(n, block) {
				return true
			}
		}
		for ch := t.FirstChild(n); ch >= 0; ch = t.NextSibling(ch) {
			if walk(ch, depth+1) {
				return true
			}
		}
		return false
	}
	return walk(block, 0)
}

// unconditional reports whether node n runs every time block does: no
// if, try, with-less branch or loop stands between them.
func (c ruleTL020) unconditional(n, block int32) bool {
	t := c.t
	for p := t.Parent(n); p >= 0 && p != block; p = t.Parent(p) {
		switch t.Kind(p) {
		case syntax.KindIfStatement, syntax.KindTryStatement, syntax.KindForStatement, syntax.KindWhileStatement,
			syntax.KindConditionalExpression, syntax.KindFunctionDefinition, syntax.KindLambda:
			return false
		}
	}
	return true
}

// unconditionalOrParamLoop is unconditional, but lets one for loop (over
// the parameters) stand between.
func (c ruleTL020) unconditionalOrParamLoop(n, block int32) bool {
	t := c.t
	loops := 0
	for p := t.Parent(n); p >= 0 && p != block; p = t.Parent(p) {
		switch t.Kind(p) {
		case syntax.KindForStatement:
			loops++
			if loops > 1 {
				return false
			}
		case syntax.KindIfStatement, syntax.KindTryStatement, syntax.KindWhileStatement,
			syntax.KindConditionalExpression, syntax.KindFunctionDefinition, syntax.KindLambda:
			return false
		}
	}
	return true
}

// ruleTL020 is the TL020 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL020 struct{ *checker }
