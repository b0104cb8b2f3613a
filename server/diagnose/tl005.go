package diagnose

import "fmt"

// noCompile reports each torch.compile once when the target has none.
func (c ruleTL005) noCompile() {
	for _, s := range c.a.sites {
		if s.kind != siteCall {
			continue // a wrapper's call or model.compile: its torch.compile is reported, or it may be another compile
		}
		c.add(Diagnostic{
			Code: CodeNoCompile, Severity: SeverityError, Span: c.siteSpan(s),
			Message: fmt.Sprintf("%s on the target has no torch.compile (its torch/__init__.py defines none); this call fails with AttributeError there", c.torchName()),
		})
	}
}

// ruleTL005 is the TL005 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL005 struct{ *checker }
