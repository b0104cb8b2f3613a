package syntax

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// StringValue is the value of a string or concatenated_string node:
// prefixes and quotes removed, escapes processed (f-strings keep their
// text between the quotes).
func (t *Tree) StringValue(n int32) string {
	if t.Kind(n) == KindConcatenatedString {
		var sb strings.Builder
		for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
			if t.nodes[c].Kind == KindString {
				sb.WriteString(Unquote(t.Text(c)))
			}
		}
		return sb.String()
	}
	return Unquote(t.Text(n))
}

// Unquote returns the value of a Python string literal. It tolerates a
// missing closing quote, as in a buffer being typed.
func Unquote(lit string) string {
	i := 0
	raw, bytesLit := false, false
	for i < len(lit) && lit[i] != '"' && lit[i] != '\'' {
		switch lit[i] {
		case 'r', 'R':
			raw = true
		case 'b', 'B':
			bytesLit = true
		}
		i++
	}
	if i == len(lit) {
		return ""
	}
	q := lit[i : i+1]
	if strings.HasPrefix(lit[i:], q+q+q) {
		q = q + q + q
	}
	body := strings.TrimSuffix(lit[i+len(q):], q)
	if raw || !strings.Contains(body, `\`) {
		return body
	}
	return unescape(body, bytesLit)
}

// unescape processes Python's backslash escapes. Unknown escapes stay as
// written, as Python keeps them.
func unescape(s string, bytesLit bool) string {
	var sb strings.Builder
	sb.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case '\\', '\'', '"':
			sb.WriteByte(e)
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 32)
			writeCode(&sb, rune(v), bytesLit)
			i = j - 1
		case 'x', 'u', 'U':
			width := 2
			switch e {
			case 'u':
				width = 4
			case 'U':
				width = 8
			}
			if e != 'x' && bytesLit || i+1+width > len(s) {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			v, err := strconv.ParseUint(s[i+1:i+1+width], 16, 32)
			if err != nil {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			writeCode(&sb, rune(v), bytesLit)
			i += width
		default:
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	return sb.String()
}

func writeCode(sb *strings.Builder, r rune, bytesLit bool) {
	if bytesLit || r < utf8.RuneSelf {
		sb.WriteByte(byte(r))
		return
	}
	sb.WriteRune(r)
}

// LiteralContents returns the contents of a Python string literal (or of
// adjacent literals), without prefix and quotes. Escapes are left as
// written.
func LiteralContents(lit []byte) string {
	s := string(lit)
	var out strings.Builder
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\r\n\\")
		i := 0
		for i < len(s) && strings.IndexByte("rRbBuUfFtT", s[i]) >= 0 {
			i++
		}
		s = s[i:]
		if s == "" {
			break
		}
		q := s[:1]
		if q != `"` && q != `'` {
			break
		}
		if strings.HasPrefix(s, q+q+q) {
			q = q + q + q
		}
		s = s[len(q):]
		end := closingQuote(s, q)
		if end < 0 {
			out.WriteString(s)
			break
		}
		out.WriteString(s[:end])
		s = s[end+len(q):]
	}
	return out.String()
}

func closingQuote(s, q string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q[0]:
			if strings.HasPrefix(s[i:], q) {
				return i
			}
		}
	}
	return -1
}

// OneLine collapses the whitespace of source text into single spaces.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// IsIdentifier says whether s is a Python identifier: a letter or an
// underscore, then letters, digits and underscores; any non-ASCII rune
// counts as a letter, as the module names of a site and a workspace may
// hold them.
func IsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f:
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
