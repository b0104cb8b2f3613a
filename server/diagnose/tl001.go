package diagnose

import "fmt"

func (c ruleTL001) cudagraphsInThreads(s *compileSite, st threadStart, cg cudagraphState) {
	d := Diagnostic{Code: CodeCudagraphsInThreads, Severity: SeverityError, Span: cg.span}
	off := cudagraphDecision(c).treesOff(s)
	treeGates := c.index().treeGates
	const trees = fileTrees
	assertLine := cudagraphDecision(c).tlsAssert()
	if !cudagraphDecision(c).threadHazard(s) {
		return
	}
	switch {
	case off != nil:
		d.Message = fmt.Sprintf("%s turns on CUDA graphs, and this compiled code runs in other threads (%s); with cudagraph_trees off (line %d), legacy CUDA graphs share static input and output buffers between threads: results can be wrong",
			cg.why, threadRules(c).where(st), off.Span.Start.Line+1)
	case len(treeGates) > 0:
		d.Message = fmt.Sprintf("%s turns on CUDA graphs, and this compiled code runs in other threads (%s); in %s, CUDA graph trees keep their state in the thread that first used them, and other threads fail with AssertionError at %s:%d",
			cg.why, threadRules(c).where(st), c.torchName(), trees, assertLine+1)
	default:
		d.Message = fmt.Sprintf("%s turns on CUDA graphs, and this compiled code runs in other threads (%s); CUDA graphs share static input and output buffers between threads: results can be wrong",
			cg.why, threadRules(c).where(st))
	}
	if st.ext != nil {
		d.Related = append(d.Related, st.ext.Path...)
	}
	d.Message += "; turn CUDA graphs off for threaded use, or make every compiled call from one thread"
	if f := c.a.lookupFlag(inductorConfig, keyCudagraphs); f != nil {
		d.Related = append(d.Related, c.flagRelated(f, "triton.cudagraphs is defined here"))
	}
	if cg.kind == "mode" {
		if l := cudagraphDecision(c).modeLine(s.mode); l >= 0 {
			d.Related = append(d.Related, Related{File: "torch/_inductor/__init__.py", Line: l,
				Message: fmt.Sprintf("mode %q sets triton.cudagraphs", s.mode)})
		}
	}
	if off == nil {
		for i, g := range treeGates {
			if i == 2 {
				break
			}
			d.Related = append(d.Related, Related{File: g.File, Line: g.Line, Message: "gate: " + g.Text})
		}
		if assertLine >= 0 {
			d.Related = append(d.Related, Related{File: trees, Line: assertLine, Message: c.files.text(trees, assertLine)})
		}
	}
	d.Fixes = cudagraphDecision(c).cudagraphsOffFixes(s, cg)
	c.add(d)
}

// ruleTL001 is the TL001 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL001 struct{ *checker }
