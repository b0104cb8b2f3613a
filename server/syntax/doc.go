// Package syntax is torchlsp's one Python syntax layer: the only package
// that talks to tree-sitter. Buffer analysis (pybuf), diagnostics
// (diagnose), the config-gate scanner (gates) and the package index
// (pyindex) all parse through it and read the same representation.
//
// # The representation
//
// A parse produces a Tree: the named nodes of tree-sitter's tree,
// flattened in pre-order into one Go slice of fixed-size Nodes (kind,
// field, byte range, start and end row/column, parent, first child, next
// sibling). The C tree is walked once, inside C, by a single cgo call that
// writes the nodes straight into Go memory; the C tree is freed before
// Parse returns. Walking a Tree therefore never crosses into C, costs no
// allocation, and a Tree needs no Close and is safe for concurrent
// readers. Anonymous nodes (punctuation, keywords) are left out; a named
// node below an anonymous one hangs from its nearest named ancestor.
//
// Kinds and fields are small integers generated from the linked grammar
// (kinds.go, by internal/kindgen): analyses switch on KindCall, FieldObject
// and so on instead of comparing strings. Nodes are addressed by int32
// index; -1 is no node.
//
// Text helpers that every analysis needs live here too: node text,
// children by field, dotted chains, string literal values, positions and
// line indexes.
//
// # Configuration of tree-sitter
//
// This package's init points the tree-sitter runtime's allocator at libc's
// malloc, calloc, realloc and free. go-tree-sitter's own default routes
// each allocation through a Go callback (C→Go→C per malloc), which made
// parsing several times slower while ending in libc's malloc anyway.
// Because every parse in torchlsp goes through this package, every binary
// that parses Python (the shipped torchlsp and each package's tests)
// imports it and runs with the same allocator; no other package changes
// tree-sitter's process-wide state.
//
// # Cost
//
// Parsers are reusable and hold a tree-sitter parser plus scratch memory
// for flattening (kept only while small). A Pool lends parsers to
// goroutines. Parsing can be cancelled through a context
// (Parser.ParseContext) and restricted to byte ranges of the text
// (Parser.ParseRanges), which the gate scanner uses to parse only the
// statements that can matter.
//
// Every parse is bounded in CPU time by CPULimit: 50 ms plus 5 µs a byte
// of text, measured on the parsing thread so a busy machine does not
// count. Tree-sitter takes time quadratic in the length of some broken
// texts (syntaxtest.Quadratic); such a parse stops at the limit and its
// Tree, empty, reports GaveUp. Real Python needs a tenth of the limit
// (torch) to a half (the densest generated code known).
package syntax
