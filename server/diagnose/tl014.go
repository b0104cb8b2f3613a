package diagnose

import (
	"fmt"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// sharedCallable is the line where the target's CompiledFxGraph keeps
// current_callable as a plain attribute, or -1 when it keeps it per
// thread (a property) or has no such class.
func (c ruleTL014) sharedCallable() int {
	class := c.files.find(fileOutputCode, 0, "class CompiledFxGraph")
	if class < 0 || c.files.find(fileOutputCode, 0, "def current_callable(") >= 0 {
		return -1
	}
	if i := c.files.find(fileOutputCode, class, "current_callable:"); i >= 0 {
		return i
	}
	return c.files.find(fileOutputCode, class, "self.current_callable =")
}

// sharedCallableInThreads reports compiled code with CUDA graphs first
// compiled in several threads at once, on a torch whose compiled graphs
// share one callable between threads (TL014).
func (c ruleTL014) sharedCallableInThreads(s *compileSite, st threadStart, cg cudagraphState, rc reach, field int) {
	_, compiledInThread := rc.funcs[s.fn]
	compiledInThread = compiledInThread && s.fn >= 0
	several := st.many || rc.starts[s] >= 2
	if !several || !compiledInThread && c.warmedUp(s, rc) {
		return
	}
	how := "its first calls come from several threads at once"
	if compiledInThread {
		how = "every thread compiles this code"
	}
	mutation := c.files.find(fileOutputCode, 0, "current_callable = cudagraphify(")
	d := Diagnostic{
		Code: CodeSharedCallable, Severity: SeverityWarning, Span: c.siteSpan(s),
		Message: fmt.Sprintf("%s turns on CUDA graphs, and %s (%s): in %s, threads that compile equal graphs share one compiled graph, whose callable (current_callable, %s:%d) CUDA-graph wrapping in one thread replaces for all; call it once on one thread before starting the others, or turn CUDA graphs off for threaded use",
			cg.why, how, threadRules(c).where(st), c.torchName(), fileOutputCode, field+1),
		Related: []Related{{File: fileOutputCode, Line: field, Message: c.files.text(fileOutputCode, field)}},
	}
	if mutation >= 0 {
		d.Related = append(d.Related, Related{File: fileOutputCode, Line: mutation, Message: c.files.text(fileOutputCode, mutation)})
	}
	if st.ext != nil {
		d.Related = append(append([]Related(nil), st.ext.Path...), d.Related...)
	}
	d.Fixes = cudagraphDecision(c).cudagraphsOffFixes(s, cg)
	c.add(d)
}

// warmedUp reports whether compiled code is also called outside the
// functions threads run: a warm-up that compiles it on one thread.
func (c ruleTL014) warmedUp(s *compileSite, rc reach) bool {
	a := c.a
	for _, name := range s.targets {
		for _, call := range a.callsNamed(name) {
			a.work++
			if call.node == s.node {
				continue
			}
			if _, inThread := rc.funcs[call.fn]; inThread && call.fn >= 0 {
				continue
			}
			if c.t.fnOf[call.node] >= 0 && c.t.Kind(c.t.fnOf[call.node]) != syntax.KindFunctionDefinition {
				continue
			}
			if a.inLambda(call.node) {
				continue // pool.submit(lambda: f(x)) runs in the thread
			}
			return true
		}
	}
	return false
}

// ruleTL014 is the TL014 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL014 struct{ *checker }
