package pybuf

import (
	"sync"

	"github.com/torchlsp/torchlsp/server/pyscope"
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

	// names is the table of every name of the version, built on first
	// use (navigation asks for it; completions and diagnostics do not).
	names     *pyscope.Table
	namesOnce sync.Once
}

// HasErrors reports whether the text did not parse cleanly.
func (b *Buffer) HasErrors() bool { return b.errors }

// Tree is the syntax tree the buffer was analysed from: diagnostics and
// other analyses of the same version read it instead of parsing again.
// Node ids in it are the ones the Buffer's analysis uses.
func (b *Buffer) Tree() *syntax.Tree { return b.tree }

// Scopes is the table of the buffer's scopes, bindings and identifiers
// (package pyscope), built once per version from the same tree: what
// "go to definition" of any name in the buffer resolves through.
func (b *Buffer) Scopes() *pyscope.Table {
	b.namesOnce.Do(func() { b.names = pyscope.New(b.tree) })
	return b.names
}

// Lines is the buffer's line index.
func (b *Buffer) Lines() syntax.Lines { return b.lines }

func (b *Buffer) spanOf(start, end int) Span {
	return Span{Start: b.lines.Pos(start), End: b.lines.Pos(end)}
}
