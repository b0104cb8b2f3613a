package gates

import "bytes"

// piece is a byte span of a file made of whole top-level statements.
type piece struct{ start, end, line int }

// topLevelPieces splits Python source into its top-level statements (a
// decorator stays with its definition; else/elif/except/finally stay with
// their statement). It tracks strings, brackets and backslash continuations;
// it is a heuristic, so callers fall back to the whole file when a piece does
// not parse cleanly.
func topLevelPieces(b []byte) []piece {
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
		c := b[i]
		if atLineStart {
			atLineStart = false
			if quote == 0 && depth == 0 && !continued && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '#' {
				if i > start && !decorator && !continuesCompound(b[i:]) {
					out = append(out, piece{start, i, startLine})
					start, startLine = i, line
				}
				decorator = c == '@'
			}
			continued = false
		}
		switch {
		case quote != 0:
			switch {
			case c == '\\':
				if i+1 < len(b) && b[i+1] == '\n' {
					line++
					atLineStart = false
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
