package diagnose

import (
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/internal/editdist"
)

func (c ruleTL004) unknownMode(s *compileSite) {
	modes := sortedKeys(c.cat.Modes)
	lit := s.settingValue("mode")
	if _, ok := c.t.PlainString(lit); !ok {
		return
	}
	d := Diagnostic{
		Code: CodeUnknownFlag, Severity: SeverityError, Span: c.t.ContentSpan(lit),
		Message: fmt.Sprintf("%q is not a torch.compile mode in %s (the target's); its modes are %s",
			s.mode, c.torchName(), strings.Join(modes, ", ")),
	}
	best, bestD := "", 4
	for _, m := range modes {
		if dist := editdist.Distance(s.mode, m, bestD-1); dist < bestD {
			best, bestD = m, dist
		}
	}
	if best != "" {
		d.Message += fmt.Sprintf("; did you mean %q?", best)
		d.Fixes = append(d.Fixes, Fix{Title: fmt.Sprintf("Change mode to %q", best),
			Edits: []Edit{{Span: d.Span, NewText: best}}, Preferred: true})
	}
	c.add(d)
}

func (c ruleTL004) unknownFlag(r *FlagRef) {
	if r.Spelling == SpellOptionsKey && c.files.find("torch/__init__.py", 0, "options.pop(\""+r.Key+"\"") >= 0 {
		return // torch.compile takes it out of options itself (guard_filter_fn, 2.11)
	}
	what := fmt.Sprintf("%s is not a flag of %s in %s (the target's)", r.Key, r.Module, c.torchName())
	if r.Spelling == SpellOptionsKey {
		what = fmt.Sprintf("%q is not an option of torch.compile in %s (the target's): %s has no flag %s",
			r.Key, c.torchName(), r.Module, r.Key)
	}
	d := Diagnostic{Code: CodeUnknownFlag, Severity: SeverityError, Span: r.Span, Message: what}
	var sugg []string
	for _, s := range c.cat.Suggest(r.Module + "." + r.Key) {
		if c.a.lookupFlag(r.Module, s) != nil {
			sugg = append(sugg, s)
		}
	}
	if len(sugg) > 0 {
		d.Message += "; did you mean " + strings.Join(sugg[:min(3, len(sugg))], ", ") + "?"
	}
	for _, s := range sugg {
		text, ok := c.spell(r, s)
		if !ok {
			continue
		}
		d.Fixes = append(d.Fixes, Fix{Title: "Change to " + s, Edits: []Edit{{Span: r.Span, NewText: text}},
			Preferred: len(d.Fixes) == 0})
		if len(d.Fixes) == 3 {
			break
		}
	}
	c.add(d)
}

// spell returns the text that names module-relative key in r's spelling,
// replacing r.Span; false when the spelling cannot name it (a key behind
// a different alias, a dotted key as a keyword argument).
func (c ruleTL004) spell(r *FlagRef, key string) (string, bool) {
	if !strings.HasPrefix(key, r.KeyPrefix) {
		return "", false
	}
	key = key[len(r.KeyPrefix):]
	if r.Spelling == SpellPatchKwarg && strings.Contains(key, ".") {
		return "", false
	}
	return key, true
}

// ruleTL004 is the TL004 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL004 struct{ *checker }
