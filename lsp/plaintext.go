package lsp

import (
	"net/url"
	"strings"
)

// plainText turns the markdown the engine writes into plain text, for a
// client that asked for plaintext hovers: code blocks lose their fences
// and keep their lines as they are, code spans their backticks, strong
// emphasis its markers, links become their file path (with the line their
// #L fragment names) or, for other links, their text and address; rules
// and hard line breaks go. It covers what the engine writes (CommonMark's
// fences, code spans, **strong**, links, ATX headings, thematic breaks),
// and leaves anything else, such as a docstring's *args, as written.
func plainText(md string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
				continue
			}
			out = append(out, line)
			continue
		}
		if f := openingFence(trimmed); f != "" {
			fence = f
			continue
		}
		if isThematicBreak(trimmed) {
			out = append(out, "")
			continue
		}
		if h := strings.TrimLeft(trimmed, "#"); len(h) < len(trimmed) && len(trimmed)-len(h) <= 6 && (h == "" || h[0] == ' ') {
			line = strings.TrimSpace(h)
		}
		out = append(out, strings.TrimRight(plainInline(line), " "))
	}
	// No runs of blank lines where a rule stood between paragraphs.
	text := strings.Join(out, "\n")
	for strings.Contains(text, "\n\n\n") {
		text = strings.ReplaceAll(text, "\n\n\n", "\n\n")
	}
	return strings.Trim(text, "\n") + "\n"
}

// openingFence returns the fence a line opens (``` or ~~~, three or more),
// or "".
func openingFence(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 && (c == "~" || !strings.Contains(line[n:], "`")) {
			return line[:n]
		}
	}
	return ""
}

// isThematicBreak reports whether a line is a rule: three or more of one
// of - * _, spaces between allowed.
func isThematicBreak(line string) bool {
	s := strings.ReplaceAll(strings.TrimSpace(line), " ", "")
	if len(s) < 3 {
		return false
	}
	return strings.Trim(s, s[:1]) == "" && strings.ContainsAny(s[:1], "-*_")
}

// plainInline rewrites one line's inline markup.
func plainInline(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == '`':
			n := runOf(line[i:], '`')
			if end := strings.Index(line[i+n:], line[i:i+n]); end >= 0 && runOf(line[i+n+end:], '`') == n {
				code := line[i+n : i+n+end]
				if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' {
					code = code[1 : len(code)-1]
				}
				b.WriteString(code)
				i += n + end + n
				continue
			}
			b.WriteString(line[i : i+n])
			i += n
		case c == '[' || (c == '!' && strings.HasPrefix(line[i:], "![")):
			open := i
			if c == '!' {
				open++
			}
			if text, dest, n, ok := link(line[open:]); ok {
				b.WriteString(linkText(plainInline(text), dest))
				i = open + n
				continue
			}
			b.WriteByte(c)
			i++
		case (c == '*' || c == '_') && strings.HasPrefix(line[i:], string([]byte{c, c})):
			if inner, n, ok := strong(line, i); ok {
				b.WriteString(plainInline(inner))
				i += n
				continue
			}
			b.WriteString(line[i : i+2])
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func runOf(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// link parses "[text](dest)" at the start of s, with balanced brackets in
// text and no spaces in dest, and returns its length.
func link(s string) (text, dest string, n int, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				rest := s[i+1:]
				if !strings.HasPrefix(rest, "(") {
					return "", "", 0, false
				}
				end := strings.IndexByte(rest, ')')
				if end < 0 || strings.ContainsAny(rest[1:end], " \t") {
					return "", "", 0, false
				}
				return s[1:i], rest[1:end], i + 1 + end + 1, true
			}
		case '`':
			// A code span's brackets do not count.
			if end := strings.IndexByte(s[i+1:], '`'); end >= 0 {
				i += end + 1
			}
		}
	}
	return "", "", 0, false
}

// linkText is a link as plain text: a file link is its path (and line,
// from a #L fragment), which a plain-text client can open; another link
// is its text and address.
func linkText(text, dest string) string {
	u, err := url.Parse(dest)
	if err != nil || u.Scheme != "file" {
		if text == "" || text == dest {
			return dest
		}
		return text + " <" + dest + ">"
	}
	p := u.Path
	if line, ok := strings.CutPrefix(u.Fragment, "L"); ok && line != "" && strings.Trim(line, "0123456789") == "" {
		p += ":" + line
	}
	return p
}

// strong finds the strong emphasis opening at line[i] (** or __): the
// opener must be followed, and its closer preceded, by other than a space,
// as CommonMark asks, and neither may touch a word on its outer side
// (stricter than CommonMark for **), so "f(*args, **kwargs)" and "2**3"
// stay as they are. It returns the inner text and the length through the
// closer.
func strong(line string, i int) (inner string, n int, ok bool) {
	delim := line[i : i+2]
	body := line[i+2:]
	if body == "" || body[0] == ' ' || (i > 0 && isWordChar(line[i-1])) {
		return "", 0, false
	}
	for j := 1; j+2 <= len(body); j++ {
		if body[j:j+2] != delim || body[j-1] == ' ' {
			continue
		}
		after := j + 2
		if after < len(body) && isWordChar(body[after]) {
			continue
		}
		return body[:j], 2 + after, true
	}
	return "", 0, false
}

func isWordChar(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c >= 0x80
}
