package diagnose

import "fmt"

// flagAlias hints at the real name of an aliased flag.
func (c ruleTL008) flagAlias(r *FlagRef) {
	target := r.Flag.Alias
	d := Diagnostic{
		Code: CodeFlagAlias, Severity: SeverityHint, Span: r.Span,
		Message: fmt.Sprintf("%s.%s is an alias of %s in %s; use that name", r.Module, r.Key, target, c.torchName()),
		Related: []Related{c.flagRelated(r.Flag, "alias defined here")},
	}
	if f, ok := c.cat.Flag(target); ok {
		d.Related = append(d.Related, c.flagRelated(f, target+" is defined here"))
		if f.Module == r.Module && (r.Spelling != SpellOptionsKey || f.Module == inductorConfig) {
			if text, ok := ruleTL004(c).spell(r, f.Key); ok {
				d.Fixes = append(d.Fixes, Fix{Title: "Use " + f.Key, Preferred: true,
					Edits: []Edit{{Span: r.Span, NewText: text}}})
			}
		}
	}
	c.add(d)
}

// ruleTL008 is the TL008 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL008 struct{ *checker }
