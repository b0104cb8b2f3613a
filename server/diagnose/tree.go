package diagnose

import (
	"fmt"
	"sort"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"

	"github.com/torchlsp/torchlsp/server/pybuf"
)

// node is one named node of the syntax tree, copied into Go memory so the
// analysis does not cross into C for every question.
type node struct {
	kind, field         string
	start, end          uint32 // byte offsets
	sp, ep              pybuf.Pos
	parent, first, next int32
}

// tree is a flattened syntax tree of one buffer.
type tree struct {
	src   []byte
	nodes []node // nodes[0] is the module
	lines []int  // start offset of each line
}

// parseTree parses src with tree-sitter and flattens the named nodes.
func parseTree(src []byte) (*tree, error) {
	lang := sitter.NewLanguage(python.Language())
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(lang); err != nil {
		return nil, fmt.Errorf("diagnose: set tree-sitter language: %w", err)
	}
	ts := p.Parse(src, nil)
	if ts == nil {
		return nil, fmt.Errorf("diagnose: tree-sitter returned no tree")
	}
	defer ts.Close()

	n := lang.NodeKindCount()
	kinds := make([]string, n)
	named := make([]bool, n)
	for i := range n {
		id := uint16(i)
		if named[i] = lang.NodeKindIsNamed(id) && lang.NodeKindIsVisible(id); named[i] {
			kinds[i] = lang.NodeKindForId(id)
		}
	}
	nf := lang.FieldCount()
	fields := make([]string, nf+1)
	for i := uint32(1); i <= nf; i++ {
		fields[i] = lang.FieldNameForId(uint16(i))
	}

	t := &tree{src: src, nodes: make([]node, 0, len(src)/8+16), lines: []int{0}}
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	c := ts.Walk()
	defer c.Close()
	var last []int32  // per node: its last child so far
	var stack []int32 // named ancestors of the cursor's node
	anc := int32(-1)
	for {
		tn := c.Node()
		sym := tn.KindId()
		cur := int32(-1)
		isNamed, kind := false, ""
		if int(sym) < len(named) {
			isNamed, kind = named[sym], kinds[sym]
		} else if tn.IsError() {
			isNamed, kind = true, "ERROR"
		}
		if isNamed {
			cur = int32(len(t.nodes))
			sb, eb := tn.StartByte(), tn.EndByte()
			field := ""
			if fid := c.FieldId(); int(fid) < len(fields) {
				field = fields[fid]
			}
			t.nodes = append(t.nodes, node{
				kind: kind, field: field,
				start: uint32(sb), end: uint32(eb),
				sp: t.pos(int(sb)), ep: t.pos(int(eb)),
				parent: anc, first: -1, next: -1,
			})
			last = append(last, -1)
			if anc >= 0 {
				if l := last[anc]; l >= 0 {
					t.nodes[l].next = cur
				} else {
					t.nodes[anc].first = cur
				}
				last[anc] = cur
			}
		}
		if c.GotoFirstChild() {
			stack = append(stack, anc)
			if isNamed {
				anc = cur
			}
			continue
		}
		for !c.GotoNextSibling() {
			if !c.GotoParent() {
				return t, nil
			}
			anc = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
	}
}

// pos converts a byte offset to a position (columns in bytes, as
// tree-sitter counts them).
func (t *tree) pos(off int) pybuf.Pos {
	l := sort.SearchInts(t.lines, off+1) - 1
	return pybuf.Pos{Line: l, Col: off - t.lines[l]}
}

// line returns line i without its ending, or "" past the end.
func (t *tree) line(i int) string {
	if i < 0 || i >= len(t.lines) {
		return ""
	}
	e := len(t.src)
	if i+1 < len(t.lines) {
		e = t.lines[i+1] - 1
	}
	return strings.TrimSuffix(string(t.src[t.lines[i]:e]), "\r")
}

func (t *tree) text(n int32) string {
	return string(t.src[t.nodes[n].start:t.nodes[n].end])
}

func (t *tree) span(n int32) pybuf.Span {
	return pybuf.Span{Start: t.nodes[n].sp, End: t.nodes[n].ep}
}

// child returns the first child of n with the given field, or -1.
func (t *tree) child(n int32, field string) int32 {
	for c := t.nodes[n].first; c >= 0; c = t.nodes[c].next {
		if t.nodes[c].field == field {
			return c
		}
	}
	return -1
}

// children returns the named children of n, comments left out.
func (t *tree) children(n int32) []int32 {
	var out []int32
	for c := t.nodes[n].first; c >= 0; c = t.nodes[c].next {
		if t.nodes[c].kind != "comment" {
			out = append(out, c)
		}
	}
	return out
}

// unwrap strips parentheses around an expression.
func (t *tree) unwrap(n int32) int32 {
	for n >= 0 && t.nodes[n].kind == "parenthesized_expression" {
		cs := t.children(n)
		if len(cs) != 1 {
			return n
		}
		n = cs[0]
	}
	return n
}

// chain returns the identifiers of a dotted chain of names (a.b.c), or nil
// when n is anything else.
func (t *tree) chain(n int32) []int32 {
	switch t.nodes[n].kind {
	case "identifier":
		return []int32{n}
	case "attribute":
		obj, attr := t.child(n, "object"), t.child(n, "attribute")
		if obj < 0 || attr < 0 {
			return nil
		}
		head := t.chain(obj)
		if head == nil {
			return nil
		}
		return append(head, attr)
	}
	return nil
}

// lastName returns the final identifier of a callee: g for g(), m for
// self.m() or a.b.m().
func (t *tree) lastName(n int32) string {
	switch t.nodes[n].kind {
	case "identifier":
		return t.text(n)
	case "attribute":
		if a := t.child(n, "attribute"); a >= 0 {
			return t.text(a)
		}
	}
	return ""
}

// stringValue returns the value of a plain string literal (implicit
// concatenation joined, simple escapes kept as written) and whether n is
// one. f-strings and bytes are not plain.
func (t *tree) stringValue(n int32) (string, bool) {
	n = t.unwrap(n)
	if n < 0 {
		return "", false
	}
	switch t.nodes[n].kind {
	case "string":
		var b strings.Builder
		for c := t.nodes[n].first; c >= 0; c = t.nodes[c].next {
			switch t.nodes[c].kind {
			case "string_start":
				if strings.ContainsAny(strings.ToLower(t.text(c)), "fb") {
					return "", false
				}
			case "string_content", "escape_sequence":
				b.WriteString(t.text(c))
			case "interpolation":
				return "", false
			}
		}
		return b.String(), true
	case "concatenated_string":
		var b strings.Builder
		for _, c := range t.children(n) {
			v, ok := t.stringValue(c)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		}
		return b.String(), true
	}
	return "", false
}

// contentSpan is the span of a string literal's text between its quotes;
// for anything else it is the node's span.
func (t *tree) contentSpan(n int32) pybuf.Span {
	n = t.unwrap(n)
	nd := t.nodes[n]
	if nd.kind != "string" || nd.sp.Line != nd.ep.Line {
		return t.span(n)
	}
	var s, e pybuf.Pos = nd.sp, nd.ep
	for c := nd.first; c >= 0; c = t.nodes[c].next {
		switch t.nodes[c].kind {
		case "string_start":
			s = t.nodes[c].ep
		case "string_end":
			e = t.nodes[c].sp
		}
	}
	return pybuf.Span{Start: s, End: e}
}

// literalKind classifies a literal expression: bool, int, float, str, none;
// "" for anything else.
func (t *tree) literalKind(n int32) string {
	n = t.unwrap(n)
	if n < 0 {
		return ""
	}
	switch t.nodes[n].kind {
	case "true", "false":
		return "bool"
	case "integer":
		return "int"
	case "float":
		return "float"
	case "none":
		return "none"
	case "string", "concatenated_string":
		if _, ok := t.stringValue(n); ok {
			return "str"
		}
	case "unary_operator":
		if a := t.child(n, "argument"); a >= 0 {
			if k := t.literalKind(a); k == "int" || k == "float" {
				return k
			}
		}
	}
	return ""
}

// enclosing returns the innermost ancestor of n (n excluded) of the kind.
func (t *tree) enclosing(n int32, kind string) int32 {
	for p := t.nodes[n].parent; p >= 0; p = t.nodes[p].parent {
		if t.nodes[p].kind == kind {
			return p
		}
	}
	return -1
}

// statementOf returns the statement holding n: the ancestor whose parent
// is a block or the module.
func (t *tree) statementOf(n int32) int32 {
	for n >= 0 {
		p := t.nodes[n].parent
		if p < 0 {
			return n
		}
		if k := t.nodes[p].kind; k == "block" || k == "module" {
			return n
		}
		n = p
	}
	return -1
}
