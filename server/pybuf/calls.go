package pybuf

import (
	"sort"
	"unicode/utf8"

	"github.com/torchlsp/torchlsp/server/syntax"
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
			callee := b.tree.Child(c, syntax.FieldFunction)
			out = append(out, b.call(c, callee, qualname, b.scopeOfChain(callee)))
		}
	}
	return out
}

// resolveCallees resolves the callee of every call, once per Buffer.
func (b *Buffer) resolveCallees() {
	b.callees = make([]string, len(b.calls))
	for i, c := range b.calls {
		if callee := b.tree.Child(c, syntax.FieldFunction); callee >= 0 && b.isChain(callee) {
			b.callees[i] = b.resolveChain(callee, b.scopeOfChain(callee), 0, nil)
		}
	}
}

// scopeOfChain returns the scope the first name of chain n is looked up in.
func (b *Buffer) scopeOfChain(n int32) int32 {
	for b.nodes[n].Kind == syntax.KindAttribute {
		n = b.tree.Child(n, syntax.FieldObject)
	}
	if i := b.identIndex(n); i >= 0 {
		return b.idents[i].scope
	}
	return b.scopeAt(int(b.nodes[n].Start), nil)
}

func (b *Buffer) call(c, callee int32, qualname string, s int32) Call {
	out := Call{Qualname: qualname, Span: b.tree.Span(c), CalleeSpan: b.tree.Span(callee)}
	args := b.tree.Child(c, syntax.FieldArguments)
	if args < 0 {
		return out
	}
	if b.nodes[args].Kind != syntax.KindArgumentList { // f(x for x in y)
		out.Args = append(out.Args, b.value(args, s))
		return out
	}
	for a := b.nodes[args].FirstChild; a >= 0; a = b.nodes[a].NextSibling {
		switch b.nodes[a].Kind {
		case syntax.KindComment, syntax.KindListSplat, syntax.KindDictionarySplat:
		case syntax.KindKeywordArgument:
			name, value := b.tree.Child(a, syntax.FieldName), b.tree.Child(a, syntax.FieldValue)
			if name < 0 || value < 0 {
				continue
			}
			out.Keywords = append(out.Keywords, Keyword{
				Name: b.tree.Text(name), NameSpan: b.tree.Span(name), Value: b.value(value, s),
			})
		default:
			out.Args = append(out.Args, b.value(a, s))
		}
	}
	return out
}

// value describes argument expression n, evaluated in scope s.
func (b *Buffer) value(n, s int32) Value {
	v := Value{Kind: ValueOther, Text: b.tree.Text(n), Span: b.tree.Span(n)}
	switch b.nodes[n].Kind {
	case syntax.KindString, syntax.KindConcatenatedString:
		v.Kind, v.Str = ValueString, b.tree.StringValue(n)
	case syntax.KindTrue, syntax.KindFalse, syntax.KindNone, syntax.KindInteger, syntax.KindFloat:
		v.Kind = ValueConstant
	case syntax.KindUnaryOperator:
		if arg := b.tree.Child(n, syntax.FieldArgument); arg >= 0 {
			if k := b.nodes[arg].Kind; k == syntax.KindInteger || k == syntax.KindFloat {
				v.Kind = ValueConstant
			}
		}
	case syntax.KindIdentifier, syntax.KindAttribute:
		if b.isChain(n) {
			v.Kind, v.Qualname = ValueName, b.resolveChain(n, s, 0, nil)
		}
	case syntax.KindDictionary:
		v.Kind = ValueDict
		for p := b.nodes[n].FirstChild; p >= 0; p = b.nodes[p].NextSibling {
			if b.nodes[p].Kind != syntax.KindPair {
				continue
			}
			key, val := b.tree.Child(p, syntax.FieldKey), b.tree.Child(p, syntax.FieldValue)
			if key < 0 || val < 0 {
				continue
			}
			if k := b.nodes[key].Kind; k != syntax.KindString && k != syntax.KindConcatenatedString {
				continue
			}
			v.Entries = append(v.Entries, Entry{
				Key: b.tree.StringValue(key), KeySpan: b.tree.Span(key), Value: b.value(val, s),
			})
		}
	}
	return v
}

// StringAt returns the value of the string literal at pos, unquoted, and
// the literal's span (quotes and prefix included). For an f-string the
// value is its text between the quotes.
func (b *Buffer) StringAt(pos Pos) (value string, span Span, ok bool) {
	off, ok := b.lines.Offset(b.src, pos)
	if !ok {
		return "", Span{}, false
	}
	o := uint32(off)
	i := sort.Search(len(b.strs), func(i int) bool { return b.nodes[b.strs[i]].Start > o }) - 1
	for ; i >= 0; i-- { // the innermost string holding off starts last
		n := b.strs[i]
		if b.nodes[n].Start <= o && o < b.nodes[n].End {
			return b.tree.StringValue(n), b.tree.Span(n), true
		}
	}
	return b.lineStringAt(off)
}

// lineStringAt finds a string literal around off by scanning its line, for
// text tree-sitter could not parse: typically a string still being typed,
// with no closing quote yet.
func (b *Buffer) lineStringAt(off int) (string, Span, bool) {
	if n := b.tree.Innermost(off); n >= 0 && b.nodes[n].Kind == syntax.KindComment {
		return "", Span{}, false
	}
	ls, le := b.lines.Bounds(b.src, b.lines.Pos(off).Line)
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
			return syntax.Unquote(string(b.src[start:end])), b.spanOf(start, end), true
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
