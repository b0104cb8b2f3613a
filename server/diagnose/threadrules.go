package diagnose

import (
	"fmt"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// threads runs the checks that need to know what runs in other threads.
func (c threadRules) threads() {
	a := c.a
	if len(a.starts) == 0 && len(a.backwardStarts) == 0 && len(c.opts.External) == 0 && len(c.opts.ExternalFuncs) == 0 && len(c.opts.ExternalThreads) == 0 {
		return
	}
	rc := (threadFacts{a}).threadReach()
	c.externalStarts(rc)
	c.externalFuncs(rc)
	field, looked := -1, false
	var hot []*compileSite // compiled code with CUDA graphs run in threads
	for _, s := range a.sites {
		a.work++
		st, ok := rc.sites[s]
		if !ok {
			continue
		}
		ruleTL018(c).compiledFreeThreaded(s, st)
		cg := cudagraphDecision(c).cudagraphs(s)
		if !cg.on {
			continue
		}
		hot = append(hot, s)
		ruleTL001(c).cudagraphsInThreads(s, st, cg)
		if !looked {
			field, looked = ruleTL014(c).sharedCallable(), true
		}
		if field >= 0 {
			ruleTL014(c).sharedCallableInThreads(s, st, cg, rc, field)
		}
	}
	if len(hot) > 0 {
		ruleTL002(c).treesOffInThreads(hot, rc)
	}
	writes := false
	for i := range a.refs {
		if a.refs[i].Write {
			writes = true
			break
		}
	}
	if !writes {
		return
	}
	if ctx := ruleTL012(c).perThreadConfig(); ctx >= 0 {
		// Overrides are per thread: one set in a thread stays there, and
		// one set elsewhere does not reach it.
		ruleTL012(c).configNotInThreads(rc, ctx)
		if len(a.backwardStarts) > 0 {
			ruleTL012(c).configNotInThreads((threadFacts{a}).reachOf(a.backwardStarts), ctx)
		}
		return
	}
	ruleTL003(c).configInThreads(rc)
}

// where says where a thread start is: "threading.Thread, line 12", or
// what the workspace model said of a start in another file.
func (c threadRules) where(st threadStart) string {
	if st.ext != nil {
		return st.ext.How
	}
	return fmt.Sprintf("%s, line %d", st.how, c.t.StartPos(st.node).Line+1)
}

// runBy names a start for "the code run by ...": "threading.Thread
// (line 12)".
func (c threadRules) runBy(st threadStart) string {
	if st.ext != nil {
		return st.ext.How
	}
	return fmt.Sprintf("%s (line %d)", st.how, c.t.StartPos(st.node).Line+1)
}

// externalStarts adds the starts the workspace model found to what the
// buffer's own starts reach.
func (c threadRules) externalStarts(rc reach) {
	if len(c.opts.External) == 0 {
		return
	}
	bySpan := map[pybuf.Span]*compileSite{}
	for _, s := range c.a.sites {
		bySpan[c.siteSpan(s)] = s
	}
	for i := range c.opts.External {
		ext := &c.opts.External[i]
		s, ok := bySpan[ext.Compile]
		if !ok {
			continue
		}
		if _, ok := rc.sites[s]; !ok {
			rc.sites[s] = threadStart{node: -1, how: ext.How, within: -1, param: -1, fn: -1, many: ext.Many, ext: ext}
		}
		rc.starts[s]++
	}
}

// externalFuncs adds the functions the workspace model found run in
// threads of other files to what the buffer's own starts reach.
func (c threadRules) externalFuncs(rc reach) {
	for i := range c.opts.ExternalFuncs {
		f := &c.opts.ExternalFuncs[i]
		for _, def := range c.a.funcs[f.Name] {
			if c.t.StartPos(def).Line != f.Line {
				continue
			}
			if _, ok := rc.funcs[def]; !ok {
				rc.funcs[def] = threadStart{node: -1, how: f.How, within: -1, param: -1, fn: -1,
					ext: &ExternalStart{How: f.How, Path: f.Path}}
			}
		}
	}
}

// threadRules: the rules that read what threads run (TL001, TL002, TL003, TL012, TL014, TL018), dispatched from what the buffer's starts and the workspace model's reach. It reads and fills the checker it embeds.
type threadRules struct{ *checker }
