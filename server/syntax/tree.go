package syntax

import (
	"iter"
	"sort"
)

//go:generate go run ./internal/kindgen -o kinds.go

// Kind is a named node kind of the Python grammar (KindCall,
// KindIdentifier, ...). The constants are generated from the grammar.
type Kind uint8

// String is the kind's name in the grammar ("call").
func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Field is a field name of the Python grammar (FieldName, FieldObject, ...).
type Field uint8

// String is the field's name in the grammar ("object").
func (f Field) String() string {
	if f < fieldCount {
		return fieldNames[f]
	}
	return "Field(?)"
}

// Node is one named node of a flattened tree. Children are linked in
// source order through FirstChild and NextSibling; -1 means none. Rows and
// columns are 0-based, columns in bytes.
type Node struct {
	Start, End                         uint32 // byte offsets, End exclusive
	StartRow, StartCol, EndRow, EndCol uint32
	Parent, FirstChild, NextSibling    int32
	Kind                               Kind
	Field                              Field // the field this node fills in its parent
	flags                              uint8
	_                                  uint8
}

const (
	flagMissing = 1 << iota // a zero-width node error recovery inserted
	flagInError             // a descendant of an ERROR node
)

// Tree is the flattened syntax tree of one text: its named nodes in
// pre-order (so in source order, a parent before its children), with no
// tree-sitter memory behind it. It is immutable and safe for concurrent
// use. Node ids are indexes into it; -1 is no node.
type Tree struct {
	src      []byte
	nodes    []Node // nodes[0] is the module, when the parse produced one
	hasError bool
	gaveUp   bool
	// overMemory: the parse gave up at its memory limit (gaveUp is set).
	overMemory bool
	// parseMemory is the most C memory the parse held.
	parseMemory int64
}

// Src is the text the tree was parsed from.
func (t *Tree) Src() []byte { return t.src }

// Len is the number of nodes.
func (t *Tree) Len() int { return len(t.nodes) }

// Root is the module node, or -1 for a tree with no nodes.
func (t *Tree) Root() int32 {
	if len(t.nodes) == 0 {
		return -1
	}
	return 0
}

// HasError reports whether tree-sitter found syntax errors, or gave up.
func (t *Tree) HasError() bool { return t.hasError }

// GaveUp reports whether the parse stopped at its CPU limit (CPULimit):
// the text is one of those on which tree-sitter's error recovery takes
// time quadratic in its length. The tree then has no nodes.
func (t *Tree) GaveUp() bool { return t.gaveUp }

// OverMemory reports whether the parse stopped at its memory limit
// (MemoryLimit); GaveUp then reports it too.
func (t *Tree) OverMemory() bool { return t.overMemory }

// ParseMemory is the most C memory tree-sitter held while parsing.
func (t *Tree) ParseMemory() int64 { return t.parseMemory }

// Nodes is the tree's nodes, for analyses that index them in hot loops;
// the slice is the tree's own: read it, never write it.
func (t *Tree) Nodes() []Node { return t.nodes }

// Node returns node n; the pointer is into the tree, read-only.
func (t *Tree) Node(n int32) *Node { return &t.nodes[n] }

// Kind is n's kind; KindInvalid for n < 0.
func (t *Tree) Kind(n int32) Kind {
	if n < 0 {
		return KindInvalid
	}
	return t.nodes[n].Kind
}

// Field is the field n fills in its parent.
func (t *Tree) Field(n int32) Field { return t.nodes[n].Field }

// Parent is n's parent, -1 at the root.
func (t *Tree) Parent(n int32) int32 { return t.nodes[n].Parent }

// FirstChild is n's first child, or -1.
func (t *Tree) FirstChild(n int32) int32 { return t.nodes[n].FirstChild }

// NextSibling is the child after n in its parent, or -1.
func (t *Tree) NextSibling(n int32) int32 { return t.nodes[n].NextSibling }

// Start and End are n's byte offsets.
func (t *Tree) Start(n int32) int { return int(t.nodes[n].Start) }

// End is the offset just past n.
func (t *Tree) End(n int32) int { return int(t.nodes[n].End) }

// StartPos is where n starts.
func (t *Tree) StartPos(n int32) Pos {
	nd := &t.nodes[n]
	return Pos{Line: int(nd.StartRow), Col: int(nd.StartCol)}
}

// EndPos is where n ends.
func (t *Tree) EndPos(n int32) Pos {
	nd := &t.nodes[n]
	return Pos{Line: int(nd.EndRow), Col: int(nd.EndCol)}
}

// Span is n's stretch of the text.
func (t *Tree) Span(n int32) Span { return Span{Start: t.StartPos(n), End: t.EndPos(n)} }

// IsMissing reports a zero-width node that error recovery inserted.
func (t *Tree) IsMissing(n int32) bool { return t.nodes[n].flags&flagMissing != 0 }

// InError reports whether n lies inside an ERROR node.
func (t *Tree) InError(n int32) bool { return t.nodes[n].flags&flagInError != 0 }

// Text is n's source text; "" for n < 0.
func (t *Tree) Text(n int32) string {
	if n < 0 {
		return ""
	}
	nd := &t.nodes[n]
	return string(t.src[nd.Start:nd.End])
}

// Bytes is n's source text, shared with the tree's source.
func (t *Tree) Bytes(n int32) []byte {
	nd := &t.nodes[n]
	return t.src[nd.Start:nd.End]
}

// Child returns n's first child in field f, or -1 (also for n < 0).
func (t *Tree) Child(n int32, f Field) int32 {
	if n < 0 {
		return -1
	}
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		if t.nodes[c].Field == f {
			return c
		}
	}
	return -1
}

// ChildOfKind returns n's first child of kind k, or -1.
func (t *Tree) ChildOfKind(n int32, k Kind) int32 {
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		if t.nodes[c].Kind == k {
			return c
		}
	}
	return -1
}

// Children yields n's children in order, comments included.
func (t *Tree) Children(n int32) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
			if !yield(c) {
				return
			}
		}
	}
}

// ChildList returns n's children, comments included.
func (t *Tree) ChildList(n int32) []int32 {
	var out []int32
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		out = append(out, c)
	}
	return out
}

// CodeChildren returns n's children other than comments.
func (t *Tree) CodeChildren(n int32) []int32 {
	var out []int32
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		if t.nodes[c].Kind != KindComment {
			out = append(out, c)
		}
	}
	return out
}

// ChildCount counts n's children, comments included.
func (t *Tree) ChildCount(n int32) int {
	k := 0
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		k++
	}
	return k
}

// NthChild returns n's i-th child (0-based, comments counted), or -1.
func (t *Tree) NthChild(n int32, i int) int32 {
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		if i == 0 {
			return c
		}
		i--
	}
	return -1
}

// Unwrap strips parentheses around an expression: (x) and ((x)) are x.
func (t *Tree) Unwrap(n int32) int32 {
	for n >= 0 && t.nodes[n].Kind == KindParenthesizedExpression {
		inner := int32(-1)
		for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
			if t.nodes[c].Kind == KindComment {
				continue
			}
			if inner >= 0 {
				return n // (a, b) is a tuple's doing, not parentheses
			}
			inner = c
		}
		if inner < 0 {
			return n
		}
		n = inner
	}
	return n
}

// ChainText is a dotted chain of names as written (a.b.c), or "" when n
// is anything else (Chain).
func (t *Tree) ChainText(n int32) string {
	if n < 0 {
		return ""
	}
	ids := t.Chain(n)
	if ids == nil {
		return ""
	}
	size := len(ids) - 1
	for _, id := range ids {
		size += t.End(id) - t.Start(id)
	}
	b := make([]byte, 0, size)
	for i, id := range ids {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, t.Bytes(id)...)
	}
	return string(b)
}

// Chain returns the identifiers of a dotted chain of names (a.b.c), left
// to right, or nil when n is anything else (a call, a subscript, an
// attribute with a part missing).
func (t *Tree) Chain(n int32) []int32 {
	k := 0
	m := n
	for t.Kind(m) == KindAttribute {
		if t.Child(m, FieldAttribute) < 0 {
			return nil
		}
		m = t.Child(m, FieldObject)
		k++
	}
	if t.Kind(m) != KindIdentifier {
		return nil
	}
	out := make([]int32, k+1)
	out[0] = m
	for i := k; i > 0; i-- {
		out[i] = t.Child(n, FieldAttribute)
		n = t.Child(n, FieldObject)
	}
	return out
}

// LastName is the final identifier of a callee: g for g(), m for self.m()
// or a.b().m(); "" for anything else.
func (t *Tree) LastName(n int32) string {
	switch t.Kind(n) {
	case KindIdentifier:
		return t.Text(n)
	case KindAttribute:
		return t.Text(t.Child(n, FieldAttribute))
	}
	return ""
}

// DottedName joins the identifiers of a dotted_name with dots, leaving out
// whatever stands between them (spaces, comments, line continuations).
func (t *Tree) DottedName(n int32) string {
	if t.Kind(n) == KindIdentifier {
		return t.Text(n)
	}
	var b []byte
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		if t.nodes[c].Kind != KindIdentifier {
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, t.Bytes(c)...)
	}
	return string(b)
}

// PlainString returns the value of a plain string literal, escapes kept
// as written and implicit concatenation joined, and whether n (parentheses
// stripped) is one. f-strings and bytes are not plain.
func (t *Tree) PlainString(n int32) (string, bool) {
	n = t.Unwrap(n)
	switch t.Kind(n) {
	case KindString:
		var b []byte
		for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
			switch t.nodes[c].Kind {
			case KindStringStart:
				for _, ch := range t.Bytes(c) {
					if ch == 'f' || ch == 'F' || ch == 'b' || ch == 'B' {
						return "", false
					}
				}
			case KindStringContent, KindEscapeSequence:
				b = append(b, t.Bytes(c)...)
			case KindInterpolation:
				return "", false
			}
		}
		return string(b), true
	case KindConcatenatedString:
		var b []byte
		for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
			if t.nodes[c].Kind == KindComment {
				continue
			}
			v, ok := t.PlainString(c)
			if !ok {
				return "", false
			}
			b = append(b, v...)
		}
		return string(b), true
	}
	return "", false
}

// ContentSpan is the span of a one-line string literal's text between its
// quotes; for anything else it is the node's span.
func (t *Tree) ContentSpan(n int32) Span {
	n = t.Unwrap(n)
	sp := t.Span(n)
	if t.Kind(n) != KindString || sp.Start.Line != sp.End.Line {
		return sp
	}
	for c := t.nodes[n].FirstChild; c >= 0; c = t.nodes[c].NextSibling {
		switch t.nodes[c].Kind {
		case KindStringStart:
			sp.Start = t.EndPos(c)
		case KindStringEnd:
			sp.End = t.StartPos(c)
		}
	}
	return sp
}

// Innermost returns the deepest node holding off (Start <= off < End), or
// -1. It costs a binary search and a walk up from the last node starting
// at or before off.
func (t *Tree) Innermost(off int) int32 {
	if len(t.nodes) == 0 || off < 0 {
		return -1
	}
	o := uint32(off)
	i := int32(sort.Search(len(t.nodes), func(i int) bool { return t.nodes[i].Start > o })) - 1
	for n := i; n >= 0; n = t.nodes[n].Parent {
		if t.nodes[n].Start <= o && o < t.nodes[n].End {
			return n
		}
	}
	return -1
}

// Innermosts returns, for every node, its innermost proper ancestor of one
// of the kinds, or -1: one pass over the tree, so asking it for every node
// costs what one walk does.
func (t *Tree) Innermosts(kinds ...Kind) []int32 {
	var want [kindCount]bool
	for _, k := range kinds {
		want[k] = true
	}
	out := make([]int32, len(t.nodes))
	for i := range t.nodes {
		p := t.nodes[i].Parent
		switch {
		case p < 0:
			out[i] = -1
		case want[t.nodes[p].Kind]:
			out[i] = p
		default:
			out[i] = out[p] // parents come first in pre-order
		}
	}
	return out
}
