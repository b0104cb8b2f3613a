package syntax

// Chunks splits src into ranges of whole top-level statements, in order
// and covering src, each of at least size bytes but the last, for a
// caller that walks a module a statement at a time and need not hold the
// tree of the whole file: tree-sitter's tree takes 20–90 bytes a byte of
// text, 33 MB for torch 2.11's largest file (1.35 MB), while the tree of
// a 64 KiB chunk takes about 2 MB. It returns nil when src is not over
// size or holds no place to split.
//
// A range starts at a line that begins, at column 0, a statement that
// can stand alone: outside any bracket, string or line continuation,
// with a name or a decorator (not a string, not else/elif/except/
// finally), and not right after a decorator's line. The scan knows
// Python's strings (prefixes, triple quotes, escapes, f-string fields)
// but is no parser: a caller must parse each chunk and, should any hold
// an error, parse the whole text instead. A place the scan took wrongly
// always leaves an error in a chunk: the chunk before it ends inside a
// bracket, a string, a continuation or a decorated definition.
func Chunks(src []byte, size int) []Range {
	if size <= 0 || len(src) <= size {
		return nil
	}
	s := chunkScan{src: src}
	var starts []int // where each chunk after the first begins
	last := 0
	lineStart, cont, afterDecorator := true, false, false
	for s.i < len(src) {
		if lineStart {
			lineStart = false
			if s.depth == 0 && !cont {
				if c := src[s.i]; isNameStart(c) || c == '@' {
					if !afterDecorator && !startsClause(src[s.i:]) && s.i-last >= size {
						starts = append(starts, s.i)
						last = s.i
					}
					afterDecorator = c == '@'
				}
			}
		}
		switch c := src[s.i]; {
		case c == '\n':
			s.i++
			lineStart, cont = true, false
		case c == '\\' && s.i+1 < len(src) && src[s.i+1] == '\n':
			s.i += 2
			lineStart, cont = true, true
		case c == '\\' && s.i+2 < len(src) && src[s.i+1] == '\r' && src[s.i+2] == '\n':
			s.i += 3
			lineStart, cont = true, true
		default:
			s.token() // a string or its field may hold line breaks
		}
	}
	if len(starts) == 0 {
		return nil
	}
	lines := NewLines(src)
	out := make([]Range, 0, len(starts)+1)
	prev := 0
	for _, at := range starts {
		out = append(out, lines.Range(prev, at))
		prev = at
	}
	return append(out, lines.Range(prev, len(src)))
}

// chunkScan is Chunks' scan: the offset and the depth of open brackets.
type chunkScan struct {
	src   []byte
	i     int
	depth int
}

// token advances over one token that is not a line break: a comment (to
// its line's end), a string, a name (and the string it prefixes), a
// bracket or any other byte.
func (s *chunkScan) token() {
	src := s.src
	switch c := src[s.i]; {
	case c == '#':
		for s.i < len(src) && src[s.i] != '\n' {
			s.i++
		}
	case c == '"' || c == '\'':
		s.i = s.str(s.i, false)
	case isNameStart(c) || c >= '0' && c <= '9':
		s.i = s.word(s.i)
	case c == '(' || c == '[' || c == '{':
		s.depth++
		s.i++
	case c == ')' || c == ']' || c == '}':
		s.depth = max(s.depth-1, 0)
		s.i++
	default:
		s.i++
	}
}

// str returns the offset just past the string whose quote is at i: past
// its closing quote, at the line break that ends an unclosed one-line
// string, or at the end of the text. A backslash always escapes the next
// byte, in raw strings too (r"\"" is one string); an f-string's fields
// are scanned as expressions, whose strings may use the same quote (3.12).
func (s *chunkScan) str(i int, formatted bool) int {
	src := s.src
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	if triple {
		i += 3
	} else {
		i++
	}
	for i < len(src) {
		switch c := src[i]; {
		case c == '\\':
			i += 2
		case formatted && c == '{':
			if i+1 < len(src) && src[i+1] == '{' {
				i += 2
			} else {
				i = s.field(i + 1)
			}
		case c == q:
			if !triple {
				return i + 1
			}
			if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
				return i + 3
			}
			i++
		case c == '\n' && !triple:
			return i
		default:
			i++
		}
	}
	return len(src)
}

// field returns the offset just past the '}' that closes the f-string
// field whose expression starts at i (a format spec's nested fields
// included).
func (s *chunkScan) field(i int) int {
	src := s.src
	depth := 0
	for i < len(src) {
		switch c := src[i]; {
		case c == '{' || c == '(' || c == '[':
			depth++
			i++
		case c == '}' && depth == 0:
			return i + 1
		case c == '}' || c == ')' || c == ']':
			depth--
			i++
		case c == '"' || c == '\'':
			i = s.str(i, false)
		case isNameStart(c):
			i = s.word(i)
		default:
			i++
		}
	}
	return len(src)
}

// word returns the offset just past the name or number at i, and past the
// string it prefixes when it is a string prefix (rb"…", f'…').
func (s *chunkScan) word(i int) int {
	src := s.src
	start := i
	for i < len(src) && isNamePart(src[i]) {
		i++
	}
	if i < len(src) && (src[i] == '"' || src[i] == '\'') {
		if formatted, ok := stringPrefix(src[start:i]); ok {
			return s.str(i, formatted)
		}
	}
	return i
}

// stringPrefix reports whether word is a string prefix (r, b, u, f, t and
// their pairs, in any case), and whether it makes the string formatted.
func stringPrefix(word []byte) (formatted, ok bool) {
	if len(word) == 0 || len(word) > 2 {
		return false, false
	}
	var seen [256]bool
	for _, c := range word {
		c |= 0x20 // lower case
		switch c {
		case 'f', 't':
			formatted = true
		case 'r', 'b', 'u':
		default:
			return false, false
		}
		if seen[c] {
			return false, false
		}
		seen[c] = true
	}
	if len(word) == 2 && (seen['u'] || seen['b'] && formatted) {
		return false, false
	}
	return formatted, true
}

// startsClause reports whether line begins with a keyword that continues
// the compound statement before it rather than starting one.
func startsClause(line []byte) bool {
	for _, kw := range [...]string{"else", "elif", "except", "finally"} {
		if len(line) >= len(kw) && string(line[:len(kw)]) == kw && (len(line) == len(kw) || !isNamePart(line[len(kw)])) {
			return true
		}
	}
	return false
}

func isNameStart(c byte) bool {
	return c == '_' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80
}

func isNamePart(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }
