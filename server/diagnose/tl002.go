package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// treesOffInThreads flags turning cudagraph trees off while threads run
// compiled code with CUDA graphs.
func (c ruleTL002) treesOffInThreads(hot []*compileSite, rc reach) {
	a := c.a
	cg := a.lookupFlag(inductorConfig, keyCudagraphs)
	hotCalls := map[int32]bool{}
	for _, s := range hot {
		hotCalls[s.node] = true
	}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if r.Key != keyTrees || r.Module != inductorConfig || r.Flag == nil || !r.Write ||
			r.Value != "False" || r.Spelling == SpellEnvVar {
			continue
		}
		if r.Spelling == SpellOptionsKey && !hotCalls[r.call] {
			continue
		}
		st := rc.sites[hot[0]]
		d := Diagnostic{
			Code: CodeTreesOffInThreads, Severity: SeverityError, Span: r.Span,
			Message: fmt.Sprintf("with cudagraph_trees off, compiled code that threads run with CUDA graphs (%s) uses legacy CUDA graphs, which share static input and output buffers between threads: results can be wrong; turn CUDA graphs off instead",
				threadRules(c).where(st)),
			Related: []Related{c.flagRelated(r.Flag, "triton.cudagraph_trees is defined here")},
		}
		for i, g := range c.index().treeGates {
			if i == 2 {
				break
			}
			d.Related = append(d.Related, Related{File: g.File, Line: g.Line, Message: "gate: " + g.Text})
		}
		if cg != nil {
			if sp, ok := c.lastComponentSpan(r.Span, "cudagraph_trees"); ok {
				d.Fixes = append(d.Fixes, Fix{Title: "Turn CUDA graphs off instead (triton.cudagraphs = False)", Preferred: true,
					Edits: []Edit{{Span: sp, NewText: "cudagraphs"}}})
			}
		}
		c.add(d)
	}
}

// lastComponentSpan is the span of the trailing name within a one-line
// span whose text ends with name.
func (c ruleTL002) lastComponentSpan(sp pybuf.Span, name string) (pybuf.Span, bool) {
	if sp.Start.Line != sp.End.Line {
		return pybuf.Span{}, false
	}
	ls, le := c.t.lines.Bounds(c.t.src, sp.End.Line)
	if sp.End.Col > le-ls || !strings.HasSuffix(string(c.t.src[max(ls, ls+sp.End.Col-len(name)):ls+sp.End.Col]), name) {
		return pybuf.Span{}, false
	}
	start := sp.End
	start.Col -= len(name)
	return pybuf.Span{Start: start, End: sp.End}, true
}

// ruleTL002 is the TL002 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL002 struct{ *checker }
