package diagnose

import "fmt"

// flagType checks a literal value against the flag's type.
func (c ruleTL007) flagType(r *FlagRef) {
	t := c.t
	lit := t.literalKind(r.valueNode)
	if lit == "" || r.Spelling == SpellGetattr && r.Value == "" {
		return
	}
	allowed, ok := literalTypes(r.Flag.Type)
	if !ok || allowed[lit] || lit == "int" && allowed["float"] || lit == "bool" && allowed["int"] {
		return
	}
	d := Diagnostic{
		Code: CodeFlagType, Severity: SeverityWarning, Span: t.Span(r.valueNode),
		Message: fmt.Sprintf("%s.%s is %s in %s, but %s is %s", r.Module, r.Key, r.Flag.Type, c.torchName(), r.Value, article(lit)),
		Related: []Related{c.flagRelated(r.Flag, fmt.Sprintf("%s: %s = %s", r.Key, r.Flag.Type, r.Flag.Default))},
	}
	if lit == "str" && allowed["bool"] && !allowed["str"] {
		d.Message += ": torch stores it as given, and any non-empty string, even \"0\", counts as true"
	}
	if lit == "str" {
		s, _ := t.PlainString(r.valueNode)
		if text, ok := convertLiteral(s, allowed); ok {
			d.Fixes = append(d.Fixes, Fix{Title: "Change to " + text, Preferred: true,
				Edits: []Edit{{Span: d.Span, NewText: text}}})
		}
	}
	c.add(d)
}

// ruleTL007 is the TL007 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL007 struct{ *checker }
