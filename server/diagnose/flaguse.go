package diagnose

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// flagUse checks each flag reference: unknown keys, values of the wrong
// type, aliases, and writes an env_name_force variable overrides.
func (c *checker) flagUse() {
	a := c.a
	probed := map[string]bool{} // keys the code checks for before use
	for _, r := range a.refs {
		a.work++
		if r.probe {
			probed[r.Module+"."+r.Key] = true
		}
	}
	for i := range a.refs {
		a.work++
		r := &a.refs[i]
		if r.Spelling == SpellEnvVar || r.probe || r.Flag == nil && !r.Write && probed[r.Module+"."+r.Key] {
			continue
		}
		if r.Spelling == SpellOptionsKey && !c.cat.HasCompile {
			continue // reported once as no torch.compile
		}
		if r.Flag == nil {
			c.unknownFlag(r)
			continue
		}
		if r.Write && r.valueNode >= 0 {
			c.flagType(r)
		}
		if r.Flag.Alias != "" {
			c.flagAlias(r)
		}
		if r.Write {
			c.envForced(r)
		}
	}
}

func (c *checker) unknownFlag(r *FlagRef) {
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
func (c *checker) spell(r *FlagRef, key string) (string, bool) {
	if !strings.HasPrefix(key, r.KeyPrefix) {
		return "", false
	}
	key = key[len(r.KeyPrefix):]
	if r.Spelling == SpellPatchKwarg && strings.Contains(key, ".") {
		return "", false
	}
	return key, true
}

// flagType checks a literal value against the flag's type.
func (c *checker) flagType(r *FlagRef) {
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

func article(lit string) string {
	switch lit {
	case "none":
		return "None"
	case "int":
		return "an int"
	}
	return "a " + lit
}

// literalTypes reads a flag's type text into the literal kinds it accepts;
// ok is false for types the check does not judge (containers, callables,
// Literal[...], anything unfamiliar).
func literalTypes(typ string) (map[string]bool, bool) {
	s := strings.ReplaceAll(typ, " ", "")
	if s == "" {
		return nil, false
	}
	out := map[string]bool{}
	for _, wrap := range []string{"Optional[", "typing.Optional["} {
		if strings.HasPrefix(s, wrap) && strings.HasSuffix(s, "]") {
			out["none"] = true
			s = s[len(wrap) : len(s)-1]
		}
	}
	for _, wrap := range []string{"Union[", "typing.Union["} {
		if strings.HasPrefix(s, wrap) && strings.HasSuffix(s, "]") {
			s = strings.ReplaceAll(s[len(wrap):len(s)-1], ",", "|")
		}
	}
	for _, part := range strings.Split(s, "|") {
		switch part {
		case "bool", "int", "float", "str":
			out[part] = true
		case "None":
			out["none"] = true
		default:
			return nil, false
		}
	}
	return out, true
}

// convertLiteral turns a string a user wrote for a non-string flag into
// the literal they meant, when that is unambiguous.
func convertLiteral(s string, allowed map[string]bool) (string, bool) {
	if allowed["bool"] {
		switch strings.ToLower(s) {
		case "1", "true":
			return "True", true
		case "0", "false":
			return "False", true
		}
	}
	if allowed["int"] && s != "" && strings.Trim(s, "0123456789") == "" {
		return s, true
	}
	return "", false
}

// flagAlias hints at the real name of an aliased flag.
func (c *checker) flagAlias(r *FlagRef) {
	target := r.Flag.Alias
	d := Diagnostic{
		Code: CodeFlagAlias, Severity: SeverityHint, Span: r.Span,
		Message: fmt.Sprintf("%s.%s is an alias of %s in %s; use that name", r.Module, r.Key, target, c.torchName()),
		Related: []Related{c.flagRelated(r.Flag, "alias defined here")},
	}
	if f, ok := c.cat.Flag(target); ok {
		d.Related = append(d.Related, c.flagRelated(f, target+" is defined here"))
		if f.Module == r.Module && (r.Spelling != SpellOptionsKey || f.Module == inductorConfig) {
			if text, ok := c.spell(r, f.Key); ok {
				d.Fixes = append(d.Fixes, Fix{Title: "Use " + f.Key, Preferred: true,
					Edits: []Edit{{Span: r.Span, NewText: text}}})
			}
		}
	}
	c.add(d)
}

// envForced warns about setting a flag an env_name_force variable
// overrides, when the file or the target's environment sets it.
func (c *checker) envForced(r *FlagRef) {
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

// envAfterImport warns about setting, after torch is imported, an
// environment variable torch reads only when its config module is
// imported.
func (c *checker) envAfterImport() {
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

// maxMovedLine bounds the statements the move-above-import fix offers to
// move: one that long is generated code, and copying it for every
// reference on it would cost its length each time.
const maxMovedLine = 1024

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// moveAboveImport moves a one-line module-level statement to just above
// the first torch import, when the names it uses are bound before that.
func (c *checker) moveAboveImport(r *FlagRef) (Fix, bool) {
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
