package pybuf

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Calls returns every call whose callee resolves to qualname, in source
// order: Calls("torch.compile") finds torch.compile(fn, mode=...) however
// torch was imported, and @torch.compile(...) decorators.
func (b *Buffer) Calls(qualname string) []Call {
	b.calleesOnce.Do(b.resolveCallees)
	var out []Call
	for i, q := range b.callees {
		if q == qualname {
			c := b.calls[i]
			callee := b.child(c, fFunction)
			out = append(out, b.call(c, callee, qualname, b.scopeOfChain(callee)))
		}
	}
	return out
}

// resolveCallees resolves the callee of every call, once per Buffer.
func (b *Buffer) resolveCallees() {
	b.callees = make([]string, len(b.calls))
	for i, c := range b.calls {
		if callee := b.child(c, fFunction); callee >= 0 && b.isChain(callee) {
			b.callees[i] = b.resolveChain(callee, b.scopeOfChain(callee), 0)
		}
	}
}

// scopeOfChain returns the scope the first name of chain n is looked up in.
func (b *Buffer) scopeOfChain(n int32) int32 {
	for b.nodes[n].kind == kAttribute {
		n = b.child(n, fObject)
	}
	if i := b.identIndex(n); i >= 0 {
		return b.idents[i].scope
	}
	return b.scopeAt(int(b.nodes[n].start))
}

func (b *Buffer) call(c, callee int32, qualname string, s int32) Call {
	out := Call{Qualname: qualname, Span: b.span(c), CalleeSpan: b.span(callee)}
	args := b.child(c, fArguments)
	if args < 0 {
		return out
	}
	if b.nodes[args].kind != kArgumentList { // f(x for x in y)
		out.Args = append(out.Args, b.value(args, s))
		return out
	}
	for a := b.nodes[args].firstChild; a >= 0; a = b.nodes[a].nextSibling {
		switch b.nodes[a].kind {
		case kComment, kListSplat, kDictionarySplat:
		case kKeywordArgument:
			name, value := b.child(a, fName), b.child(a, fValue)
			if name < 0 || value < 0 {
				continue
			}
			out.Keywords = append(out.Keywords, Keyword{
				Name: b.text(name), NameSpan: b.span(name), Value: b.value(value, s),
			})
		default:
			out.Args = append(out.Args, b.value(a, s))
		}
	}
	return out
}

// value describes argument expression n, evaluated in scope s.
func (b *Buffer) value(n, s int32) Value {
	v := Value{Kind: ValueOther, Text: b.text(n), Span: b.span(n)}
	switch b.nodes[n].kind {
	case kString, kConcatenatedString:
		v.Kind, v.Str = ValueString, b.stringValue(n)
	case kTrue, kFalse, kNone, kInteger, kFloat:
		v.Kind = ValueConstant
	case kUnaryOperator:
		if arg := b.child(n, fArgument); arg >= 0 {
			if k := b.nodes[arg].kind; k == kInteger || k == kFloat {
				v.Kind = ValueConstant
			}
		}
	case kIdentifier, kAttribute:
		if b.isChain(n) {
			v.Kind, v.Qualname = ValueName, b.resolveChain(n, s, 0)
		}
	case kDictionary:
		v.Kind = ValueDict
		for p := b.nodes[n].firstChild; p >= 0; p = b.nodes[p].nextSibling {
			if b.nodes[p].kind != kPair {
				continue
			}
			key, val := b.child(p, fKey), b.child(p, fValue)
			if key < 0 || val < 0 {
				continue
			}
			if k := b.nodes[key].kind; k != kString && k != kConcatenatedString {
				continue
			}
			v.Entries = append(v.Entries, Entry{
				Key: b.stringValue(key), KeySpan: b.span(key), Value: b.value(val, s),
			})
		}
	}
	return v
}

// StringAt returns the value of the string literal at pos, unquoted, and
// the literal's span (quotes and prefix included). For an f-string the
// value is its text between the quotes.
func (b *Buffer) StringAt(pos Pos) (value string, span Span, ok bool) {
	off, ok := b.lines.offset(b.src, pos)
	if !ok {
		return "", Span{}, false
	}
	o := uint32(off)
	i := sort.Search(len(b.strs), func(i int) bool { return b.nodes[b.strs[i]].start > o }) - 1
	for ; i >= 0; i-- { // the innermost string holding off starts last
		n := b.strs[i]
		if b.nodes[n].start <= o && o < b.nodes[n].end {
			return b.stringValue(n), b.span(n), true
		}
	}
	return b.lineStringAt(off)
}

// lineStringAt finds a string literal around off by scanning its line, for
// text tree-sitter could not parse: typically a string still being typed,
// with no closing quote yet.
func (b *Buffer) lineStringAt(off int) (string, Span, bool) {
	if n := b.innermost(off); n >= 0 && b.nodes[n].kind == kComment {
		return "", Span{}, false
	}
	ls, le := b.lines.bounds(b.src, b.lines.pos(off).Line)
	for i := ls; i < le; i++ {
		c := b.src[i]
		if c == '#' {
			return "", Span{}, false
		}
		if c != '"' && c != '\'' {
			continue
		}
		j := i + 1
		for j < le && b.src[j] != c {
			if b.src[j] == '\\' {
				j++
			}
			j++
		}
		closed := j < le
		end := min(j+1, le) // past the closing quote, or the line's end
		if i <= off && (off < end || !closed && off == end) {
			start := i
			for start > ls && isStringPrefix(b.src[start-1]) {
				start--
			}
			if r, _ := utf8.DecodeLastRune(b.src[ls:start]); start > ls && isIdentRune(r) {
				start = i // "xr'...'": not a prefix
			}
			return unquote(string(b.src[start:end])), b.spanOf(start, end), true
		}
		i = j
	}
	return "", Span{}, false
}

func isStringPrefix(c byte) bool {
	switch c {
	case 'r', 'R', 'b', 'B', 'u', 'U', 'f', 'F':
		return true
	}
	return false
}

// stringValue unquotes a string or concatenated_string node.
func (b *Buffer) stringValue(n int32) string {
	if b.nodes[n].kind == kConcatenatedString {
		var sb strings.Builder
		for c := b.nodes[n].firstChild; c >= 0; c = b.nodes[c].nextSibling {
			if b.nodes[c].kind == kString {
				sb.WriteString(unquote(b.text(c)))
			}
		}
		return sb.String()
	}
	return unquote(b.text(n))
}

// unquote returns the value of a Python string literal. It tolerates a
// missing closing quote, as in a buffer being typed.
func unquote(lit string) string {
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
