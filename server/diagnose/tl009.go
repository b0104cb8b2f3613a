package diagnose

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// envAfterImport warns about setting, after torch is imported, an
// environment variable torch reads only when its config module is
// imported.
func (c ruleTL009) envAfterImport() {
	a := c.a
	if a.torchAt < 0 {
		return
	}
	seen := map[pybuf.Span]bool{}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if r.Spelling != SpellEnvVar || !r.Write || seen[r.Span] || r.Span.Start.Line <= a.torchAt {
			continue
		}
		seen[r.Span] = true
		var keys []string
		var flags []*gates.Flag
		for _, e := range c.index().bySpan[r.Span] {
			a.work++
			keys = append(keys, e.Module+"."+e.Key)
			flags = append(flags, e.Flag)
		}
		d := Diagnostic{
			Code: CodeEnvAfterImport, Severity: SeverityWarning, Span: r.Span,
			Message: fmt.Sprintf("%s reads %s once, when its config module is imported (for %s); torch is imported at line %d, so setting it here may have no effect in this process: set it before importing torch",
				c.torchName(), r.EnvVar, strings.Join(keys, ", "), a.torchAt+1),
		}
		for _, f := range flags {
			d.Related = append(d.Related, c.flagRelated(f, r.EnvVar+" is read here"))
		}
		if r.fn >= 0 {
			d.Severity = SeverityInfo
			d.Message = fmt.Sprintf("%s reads %s once, when its config module is imported (for %s); set here, after import torch (line %d), it reaches only processes started afterwards",
				c.torchName(), r.EnvVar, strings.Join(keys, ", "), a.torchAt+1)
		} else if fix, ok := c.moveAboveImport(r); ok {
			d.Fixes = append(d.Fixes, fix)
		}
		c.add(d)
	}
}

// moveAboveImport moves a one-line module-level statement to just above
// the first torch import, when the names it uses are bound before that.
func (c ruleTL009) moveAboveImport(r *FlagRef) (Fix, bool) {
	t := c.t
	st := r.stmt
	if st < 0 || t.StartPos(st).Line != t.EndPos(st).Line || t.StartPos(st).Col != 0 {
		return Fix{}, false
	}
	line := t.StartPos(st).Line
	ls, le := t.lines.Bounds(t.src, line)
	if le-ls > maxMovedLine || len(bytes.TrimSpace(t.src[t.End(st):le])) > 0 {
		return Fix{}, false // shares its line with another statement, or is too long to move
	}
	// The head name (os, or whatever imports it) must be imported earlier.
	text := t.Bytes(st)
	start := 0
	for start < len(text) && !isNameByte(text[start]) {
		start++
	}
	end := start
	for end < len(text) && isNameByte(text[end]) {
		end++
	}
	if end == start {
		return Fix{}, false
	}
	first, ok := c.a.moduleImports()[string(text[start:end])]
	bound := ok && first < c.a.torchAt
	if !bound {
		return Fix{}, false
	}
	at := pybuf.Pos{Line: c.a.torchAt}
	return Fix{
		Title:     "Move above the torch import",
		Preferred: true,
		Edits: []Edit{
			{Span: pybuf.Span{Start: at, End: at}, NewText: c.line(line) + "\n"},
			{Span: pybuf.Span{Start: pybuf.Pos{Line: line}, End: pybuf.Pos{Line: line + 1}}},
		},
	}, true
}

// ruleTL009 is the TL009 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL009 struct{ *checker }
