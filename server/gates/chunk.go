package gates

import "bytes"

// piece is a byte span of a file made of whole statements at one
// indentation level; line is the 0-based line it starts on.
type piece struct{ start, end, line int }

// topLevelPieces splits Python source into its top-level statements.
func topLevelPieces(b []byte) []piece { return splitStatements(b, 0) }

// splitStatements splits b into statements that start at lines indented by
// exactly indent columns; indent < 0 takes the indentation of the first
// indented logical line after the first line (a class body). A decorator
// stays with its definition and else/elif/except/finally with their
// statement; the text before the first such statement (for a class, its
// header) is the first piece. Strings, brackets and backslash continuations
// are tracked; it is a heuristic, so callers fall back to a whole-file parse
// when the result does not parse cleanly.
func splitStatements(b []byte, indent int) []piece {
	var out []piece
	start, startLine := 0, 0
	line := 0
	depth := 0
	var quote byte
	triple := false
	continued := false
	atLineStart := true
	decorator := false
	for i := 0; i < len(b); i++ {
		if atLineStart {
			atLineStart = false
			if quote == 0 && depth == 0 && !continued {
				j := i
				for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
					j++
				}
				if j < len(b) && b[j] != '\n' && b[j] != '\r' && b[j] != '#' {
					ind := j - i
					if indent < 0 && line > 0 && ind > 0 {
						indent = ind
					}
					if ind == indent {
						if j > start && !decorator && !continuesCompound(b[j:]) {
							out = append(out, piece{start, i, startLine})
							start, startLine = i, line
						}
						decorator = b[j] == '@'
					}
				}
			}
			continued = false
		}
		c := b[i]
		switch {
		case quote != 0:
			switch {
			case c == '\\':
				if i+1 < len(b) && b[i+1] == '\n' {
					line++
				}
				i++
			case c == quote:
				if !triple {
					quote = 0
				} else if i+2 < len(b) && b[i+1] == quote && b[i+2] == quote {
					quote = 0
					i += 2
				}
			case c == '\n':
				line++
				if !triple {
					quote = 0 // unterminated: recover at end of line
					atLineStart = true
				}
			}
		case c == '#':
			for i+1 < len(b) && b[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			quote = c
			if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
				triple = true
				i += 2
			} else {
				triple = false
			}
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		case c == '\\':
			if i+1 < len(b) && b[i+1] == '\n' {
				continued = true
			}
		case c == '\n':
			line++
			atLineStart = true
		}
	}
	if start < len(b) {
		out = append(out, piece{start, len(b), startLine})
	}
	return out
}

var compoundContinuations = [][]byte{[]byte("else"), []byte("elif"), []byte("except"), []byte("finally")}

func continuesCompound(b []byte) bool {
	for _, kw := range compoundContinuations {
		if bytes.HasPrefix(b, kw) && len(b) > len(kw) && !isIdentByte(b[len(kw)]) {
			return true
		}
	}
	return false
}

// isClassPiece reports a top-level class definition, decorated or not.
func isClassPiece(b []byte) bool {
	for bytes.HasPrefix(b, []byte("@")) {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		b = b[i+1:]
	}
	return bytes.HasPrefix(b, []byte("class")) && len(b) > 5 && !isIdentByte(b[5])
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// containsWord reports whether b holds w as a whole identifier token.
func containsWord(b []byte, w string) bool {
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(w))
		if i < 0 {
			return false
		}
		i += off
		j := i + len(w)
		if (i == 0 || !isIdentByte(b[i-1])) && (j >= len(b) || !isIdentByte(b[j])) {
			return true
		}
		off = i + 1
	}
}

func containsAnyWord(b []byte, words map[string]bool) bool {
	for w := range words {
		if containsWord(b, w) {
			return true
		}
	}
	return false
}
