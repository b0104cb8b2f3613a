package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/pybuf"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// compileArgs checks mode strings and mode with options together.
func (c ruleTL006) compileArgs() {
	t := c.t
	for _, s := range c.a.sites {
		c.a.work++
		if s.modeNode >= 0 && s.mode != "" && len(c.cat.Modes) > 0 {
			if _, ok := c.cat.Modes[s.mode]; !ok {
				ruleTL004(c).unknownMode(s)
			}
		}
		if s.modeNode < 0 || s.optionsNode < 0 ||
			t.literalKind(s.settingValue("mode")) == "none" || t.literalKind(s.settingValue("options")) == "none" {
			continue
		}
		span := t.Span(s.optionsNode)
		if s.optionsKw.node >= 0 {
			span = t.Span(s.optionsKw.node)
		} else if p := t.Parent(s.optionsNode); t.Kind(p) == syntax.KindDictionarySplat {
			span = t.Span(p)
		}
		d := Diagnostic{Code: CodeModeAndOptions, Severity: SeverityError, Span: span}
		const init = "torch/__init__.py"
		raise := c.files.find(init, 0, "Either mode or options can be specified")
		switch {
		case raise >= 0:
			from := raise
			for i := raise; i >= max(0, raise-6); i-- {
				if strings.Contains(c.files.text(init, i), "options is not None") {
					from = i
					break
				}
			}
			d.Message = fmt.Sprintf("torch.compile raises RuntimeError when given both mode and options (torch/__init__.py:%d in %s); put the mode's settings into options", from+1, c.torchName())
			if from != raise {
				d.Related = append(d.Related, Related{File: init, Line: from, Message: c.files.text(init, from)})
			}
			d.Related = append(d.Related, Related{File: init, Line: raise, Message: "RuntimeError: " + strings.Trim(c.files.text(init, raise), `"`)})
		case c.opts.SiteDir != "":
			continue // the target's torch accepts both
		default:
			d.Severity = SeverityWarning
			d.Message = "torch.compile raises RuntimeError when given both mode and options (not checked against the target's source: no mirror)"
		}
		if fix, ok := c.foldModeFix(s); ok {
			d.Fixes = append(d.Fixes, fix)
		}
		c.add(d)
	}
}

// foldModeFix removes mode= and adds the mode's flags to the options dict.
func (c ruleTL006) foldModeFix(s *compileSite) (Fix, bool) {
	t := c.t
	flags, ok := c.cat.Modes[s.mode]
	dict := t.Unwrap(s.optionsNode)
	if !ok || t.Kind(dict) != syntax.KindDictionary || s.call == nil || s.kind == siteDerived || s.modeKw.node < 0 || s.optionsKw.node < 0 {
		return Fix{}, false
	}
	have := map[string]bool{}
	entries := 0
	for _, p := range t.CodeChildren(dict) {
		entries++
		if k, ok := t.PlainString(t.Child(p, syntax.FieldKey)); ok {
			have[k] = true
		}
	}
	var add []string
	for _, k := range sortedKeys(flags) {
		if !have[k] {
			add = append(add, fmt.Sprintf("%q: %s", k, flags[k]))
		}
	}
	var edits []Edit
	if len(add) > 0 {
		text := strings.Join(add, ", ")
		if entries > 0 {
			text += ", "
		}
		at := t.StartPos(dict)
		at.Col++ // after "{"
		edits = append(edits, Edit{Span: pybuf.Span{Start: at, End: at}, NewText: text})
	}
	edits = append(edits, c.deleteArg(s.call, s.modeKw.node))
	return Fix{Title: fmt.Sprintf("Move mode=%q's settings into options", s.mode), Edits: edits, Preferred: true}, true
}

// ruleTL006 is the TL006 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL006 struct{ *checker }
