package diagnose

import (
	"fmt"
	"strings"
)

// envForced warns about setting a flag an env_name_force variable
// overrides, when the file or the target's environment sets it.
func (c ruleTL010) envForced(r *FlagRef) {
	for _, v := range r.Flag.EnvForce {
		where := ""
		if val, ok := c.opts.Env[v]; ok {
			where = fmt.Sprintf("%s (=%s in the target's environment)", v, val)
		}
		c.a.work++
		if e := c.index().envWrites[envFlag{v, r.Flag}]; e != nil {
			where = fmt.Sprintf("%s (set at line %d)", v, e.Span.Start.Line+1)
		}
		if where == "" {
			continue
		}
		c.add(Diagnostic{
			Code: CodeEnvForced, Severity: SeverityWarning, Span: r.Span,
			Message: fmt.Sprintf("%s forces %s.%s: while it is set, torch ignores values set in code, so this one has no effect", where, r.Module, r.Key),
			Related: []Related{c.flagRelated(r.Flag, "env_name_force: "+strings.Join(r.Flag.EnvForce, ", "))},
		})
		return
	}
}

// ruleTL010 is the TL010 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL010 struct{ *checker }
