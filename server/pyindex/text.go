package pyindex

import (
	"strings"
	"unicode/utf8"
)

// oneLine folds source text onto one line: whitespace runs collapsed and no
// space just inside brackets. For signatures (stripComments), comments go
// too, and so does a trailing comma before a closing bracket.
func oneLine(s string, stripComments bool) string {
	var b strings.Builder
	b.Grow(len(s))
	var quote byte
	triple := false
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			b.WriteByte(c)
			switch {
			case c == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case c == quote && !triple:
				quote = 0
			case c == quote && triple && strings.HasPrefix(s[i:], strings.Repeat(string(quote), 3)):
				b.WriteString(s[i+1 : i+3])
				i += 2
				quote = 0
			}
			continue
		}
		switch c {
		case '#':
			if stripComments {
				for i < len(s) && s[i] != '\n' {
					i++
				}
				space = true
				continue
			}
		case '\\':
			if i+1 < len(s) && (s[i+1] == '\n' || s[i+1] == '\r') {
				space = true
				continue
			}
		case ' ', '\t', '\n', '\r', '\f':
			space = true
			continue
		case '"', '\'':
			quote = c
			triple = strings.HasPrefix(s[i:], strings.Repeat(string(c), 3))
			if triple {
				emitSpace(&b, space)
				space = false
				b.WriteString(s[i : i+3])
				i += 2
				continue
			}
		}
		if c == ',' || c == ')' || c == ']' || c == '}' {
			// no space before these, and "x, )" loses its comma
			// "(a,\n)" loses its comma; "(1,)" is a tuple and keeps it.
			if c != ',' && stripComments && space {
				trimTrailingComma(&b)
			}
			space = false
		}
		emitSpace(&b, space)
		space = false
		b.WriteByte(c)
	}
	return b.String()
}

func emitSpace(b *strings.Builder, space bool) {
	if !space || b.Len() == 0 {
		return
	}
	last := b.String()[b.Len()-1]
	if last == '(' || last == '[' || last == '{' {
		return
	}
	b.WriteByte(' ')
}

func trimTrailingComma(b *strings.Builder) {
	s := b.String()
	t := strings.TrimRight(s, " ")
	if strings.HasSuffix(t, ",") && len(t) > 1 && !strings.HasSuffix(t, "(,") {
		t = strings.TrimRight(t[:len(t)-1], " ")
		b.Reset()
		b.WriteString(t)
	}
}

// cleandoc dedents a docstring as Python's inspect.cleandoc does.
func cleandoc(doc string) string {
	doc = strings.ReplaceAll(doc, "\t", "        ")
	doc = strings.ReplaceAll(doc, "\r\n", "\n")
	lines := strings.Split(doc, "\n")
	margin := -1
	for _, l := range lines[1:] {
		t := strings.TrimLeft(l, " ")
		if t == "" {
			continue
		}
		if ind := len(l) - len(t); margin < 0 || ind < margin {
			margin = ind
		}
	}
	lines[0] = strings.TrimLeft(lines[0], " ")
	if margin > 0 {
		for i := 1; i < len(lines); i++ {
			if len(lines[i]) >= margin {
				lines[i] = lines[i][margin:]
			} else {
				lines[i] = strings.TrimLeft(lines[i], " ")
			}
		}
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// summarize returns the first paragraph of a cleaned docstring on one line.
func summarize(doc string) string {
	if i := strings.Index(doc, "\n\n"); i >= 0 {
		doc = doc[:i]
	}
	doc = strings.Join(strings.Fields(doc), " ")
	if len(doc) > maxSummaryLen {
		doc = truncateUTF8(doc, maxSummaryLen) + "…"
	}
	return doc
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
