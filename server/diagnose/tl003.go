package diagnose

import "fmt"

// configInThreads is TL003: a config write in a function that threads
// run, on a torch whose config is process-wide (perThreadConfig found no
// ContextVar): it changes every thread's config, and a patch's restore
// races with the other threads.
func (c ruleTL003) configInThreads(rc reach) {
	a := c.a
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if !r.Write || r.Spelling == SpellOptionsKey || r.Spelling == SpellEnvVar || r.fn < 0 {
			continue
		}
		st, ok := rc.funcs[r.fn]
		if !ok {
			continue
		}
		d := Diagnostic{
			Code: CodeConfigInThread, Severity: SeverityWarning, Span: r.Span,
			Message: fmt.Sprintf("%s.%s is process-wide: changing it here, in code run by %s, changes it for every thread, and a patch's restore races with the other threads; set it once before starting threads",
				r.Module, r.Key, threadRules(c).runBy(st)),
		}
		if st.ext != nil {
			d.Related = append(d.Related, st.ext.Path...)
		}
		c.add(d)
	}
}

// ruleTL003 is the TL003 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL003 struct{ *checker }
