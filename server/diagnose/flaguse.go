package diagnose

import (
	"strings"
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
			ruleTL004{c}.unknownFlag(r)
			continue
		}
		if r.Write && r.valueNode >= 0 {
			ruleTL007{c}.flagType(r)
		}
		if r.Flag.Alias != "" {
			ruleTL008{c}.flagAlias(r)
		}
		if r.Write {
			ruleTL010{c}.envForced(r)
		}
	}
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

// maxMovedLine bounds the statements the move-above-import fix offers to
// move: one that long is generated code, and copying it for every
// reference on it would cost its length each time.
const maxMovedLine = 1024

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
