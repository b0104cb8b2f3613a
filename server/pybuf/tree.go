package pybuf

import (
	"sync"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// Buffer is the analysis of one version of a buffer's text. It is
// immutable and safe for concurrent use.
type Buffer struct {
	src    []byte
	lines  syntax.Lines
	tree   *syntax.Tree
	nodes  []syntax.Node // tree's nodes; nodes[0] is the module, when the parse produced one
	scopes []scope
	binds  []binding
	idents []ident // identifiers, by start offset
	calls  []int32 // call nodes, in source order
	// callees[i] is what calls[i] calls, resolved on first use.
	callees     []string
	calleesOnce sync.Once
	strs        []int32 // string nodes, by start offset
	imps        []Import
	errors      bool
	writes      bitset  // nodes assigned to (see writeTargets)
	scopeOrder  []int32 // scope indexes by start, for scopeAt
	scopeUp     []int32 // per scopeOrder position: the position of the nearest scope holding it, or -1
	work        int     // steps the analysis took, for the tests that bound them
}

// HasErrors reports whether the text did not parse cleanly.
func (b *Buffer) HasErrors() bool { return b.errors }

// Tree is the syntax tree the buffer was analysed from: diagnostics and
// other analyses of the same version read it instead of parsing again.
// Node ids in it are the ones the Buffer's analysis uses.
func (b *Buffer) Tree() *syntax.Tree { return b.tree }

// Lines is the buffer's line index.
func (b *Buffer) Lines() syntax.Lines { return b.lines }

func (b *Buffer) text(n int32) string { return b.tree.Text(n) }

func (b *Buffer) textBytes(n int32) []byte { return b.tree.Bytes(n) }

// child returns the first child of n with field f, or -1.
func (b *Buffer) child(n int32, f syntax.Field) int32 { return b.tree.Child(n, f) }

// firstOfKind returns the first child of n of kind k, or -1.
func (b *Buffer) firstOfKind(n int32, k syntax.Kind) int32 { return b.tree.ChildOfKind(n, k) }

func (b *Buffer) span(n int32) Span { return b.tree.Span(n) }

func (b *Buffer) spanOf(start, end int) Span {
	return Span{Start: b.lines.Pos(start), End: b.lines.Pos(end)}
}

// inError reports whether n lies inside an ERROR node.
func (b *Buffer) inError(n int32) bool { return b.tree.InError(n) }

// innermost returns the deepest node that contains off (start <= off <
// end), or -1.
func (b *Buffer) innermost(off int) int32 { return b.tree.Innermost(off) }
