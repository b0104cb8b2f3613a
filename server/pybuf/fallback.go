package pybuf

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// maxFallbackLine bounds the text around the cursor that the fallback
// reads: a line longer than that is generated code, and reading all of it
// for every position would make answering quadratic in its length.
const maxFallbackLine = 1024

// fallbackAt answers from the text of the line around off, for positions
// in parts tree-sitter could not parse: it reads the dotted chain of names
// that ends at the cursor and resolves its first name through the
// bindings the parsed parts made.
func (b *Buffer) fallbackAt(off int, m *meter) (Ref, bool) {
	src := b.src
	line := b.lines.Pos(off).Line
	ls, le := b.lines.Bounds(src, line)
	long := le-ls > maxFallbackLine
	if long { // read only the window around the cursor
		ls, le = max(ls, off-maxFallbackLine), min(le, off+maxFallbackLine)
		for ls < off && !utf8.RuneStart(src[ls]) {
			ls++
		}
	}
	m.add(1 + off - ls)
	if b.inCommentOrString(off, ls) {
		return Ref{}, false
	}
	start, end := off, off
	for start > ls {
		r, size := utf8.DecodeLastRune(src[ls:start])
		if !isIdentRune(r) {
			break
		}
		start -= size
	}
	for end < le {
		r, size := utf8.DecodeRune(src[end:le])
		if !isIdentRune(r) {
			break
		}
		end += size
	}
	type seg struct{ Start, End int }
	var segs []seg // left to right once reversed
	afterDot := start == end
	if afterDot {
		if start == ls || src[start-1] != '.' {
			return Ref{}, false
		}
	} else {
		segs = append(segs, seg{start, end})
	}
	for p := start; p > ls && src[p-1] == '.'; {
		if len(segs) > maxChain {
			return Ref{}, false
		}
		q := p - 1
		r := q
		for r > ls {
			c, size := utf8.DecodeLastRune(src[ls:r])
			if !isIdentRune(c) {
				break
			}
			r -= size
		}
		if r == q { // ").x", "].x", "..": not a chain of names
			return Ref{}, false
		}
		segs = append(segs, seg{r, q})
		p = r
	}
	if len(segs) == 0 {
		return Ref{}, false
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	root := string(src[segs[0].Start:segs[0].End])
	if c, _ := utf8.DecodeRuneInString(root); unicode.IsDigit(c) || pythonKeywords[root] {
		return Ref{}, false
	}
	words := make([]string, len(segs))
	for i, s := range segs {
		words[i] = string(src[s.Start:s.End])
	}
	qual, isImport := "", false
	if !long { // an import statement is never that long
		qual, isImport = b.importLineQual(ls, segs[0].Start, words, m)
	}
	if !isImport {
		base := b.resolveName(root, b.scopeAt(off, m), segs[0].Start, 0, m)
		if base == "" {
			return Ref{}, false
		}
		words[0] = base
		qual = strings.Join(words, ".")
	}
	if qual == "" {
		return Ref{}, false
	}
	r := Ref{Qualname: qual, AfterDot: afterDot}
	switch {
	case isImport:
		r.Kind = KindImport
	case len(segs) > 1 || afterDot:
		r.Kind = KindAttribute
	default:
		r.Kind = KindName
	}
	if afterDot {
		r.Span = b.spanOf(off, off)
	} else {
		r.Span = b.spanOf(start, end)
	}
	return r, true
}

// importLineQual answers for a chain on a line that is an import
// statement still being typed ("from torch.nn import Lin", "import
// torch.ut"): there the chain is an absolute module path.
func (b *Buffer) importLineQual(ls, chainStart int, words []string, m *meter) (string, bool) {
	before := string(b.src[ls:chainStart])
	chain := strings.Join(words, ".")
	fields := strings.Fields(before)
	if len(fields) == 0 || isNameList(before) && fields[0] != "import" && fields[0] != "from" {
		// Maybe a later line of "from m import (a,\n b": find the
		// statement's first line.
		module, ok := b.openFromImport(b.lines.Pos(ls).Line-1, before, m)
		if !ok {
			return "", false
		}
		if module == "" || strings.HasPrefix(module, ".") {
			return "", true
		}
		return module + "." + chain, true
	}
	switch fields[0] {
	case "import":
		if strings.Contains(before, " as ") {
			return "", true // an alias being typed
		}
		return chain, true
	case "from":
		if len(fields) == 1 { // from torch.nn
			return chain, true
		}
		module := fields[1]
		if len(fields) < 3 || fields[2] != "import" || strings.HasPrefix(module, ".") || module == "__future__" {
			return "", true
		}
		if strings.Contains(strings.Join(fields[3:], " "), " as ") {
			return "", true
		}
		return module + "." + chain, true
	}
	return "", false
}

// maxImportLines bounds the look-back for a parenthesized import.
const maxImportLines = 100

// openFromImport looks upwards from line for the first line of a
// parenthesized "from m import (" statement left open, every line in
// between listing names only. before is the current line's text before
// the cursor's chain.
func (b *Buffer) openFromImport(line int, before string, m *meter) (module string, ok bool) {
	if !isNameList(before) {
		return "", false
	}
	for l := line; l >= 0 && l > line-maxImportLines; l-- {
		ls, le := b.lines.Bounds(b.src, l)
		m.add(1 + le - ls)
		if le-ls > maxFallbackLine {
			return "", false
		}
		text := string(b.src[ls:le])
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		head, rest, found := strings.Cut(text, "(")
		if !found {
			if !isNameList(text) {
				return "", false
			}
			continue
		}
		fields := strings.Fields(head)
		if len(fields) != 3 || fields[0] != "from" || fields[2] != "import" || !isNameList(rest) {
			return "", false
		}
		return fields[1], true
	}
	return "", false
}

// isNameList reports whether s holds only names, "as" and commas: the
// inside of a parenthesized import list.
func isNameList(s string) bool {
	for _, r := range s {
		if !isIdentRune(r) && r != ',' && r != ' ' && r != '\t' {
			return false
		}
	}
	return true
}

// inCommentOrString reports whether off is in a comment or a string
// literal, judged by the tree where it parsed and by a scan of the line
// before off where it did not.
func (b *Buffer) inCommentOrString(off, ls int) bool {
	if n := b.tree.Innermost(off); n >= 0 {
		switch b.nodes[n].Kind {
		case syntax.KindComment, syntax.KindString, syntax.KindStringContent:
			return true
		}
	}
	var quote byte
	for i := ls; i < off; i++ {
		c := b.src[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return true
		}
	}
	return quote != 0
}

func isIdentRune(r rune) bool {
	return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') ||
		(r >= utf8.RuneSelf && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)))
}

// pythonKeywords are the hard keywords, which are never names.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true,
	"del": true, "elif": true, "else": true, "except": true, "finally": true, "for": true,
	"from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}
