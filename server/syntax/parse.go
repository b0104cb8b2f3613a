package syntax

/*
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include "syntax.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"time"
	"unsafe"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// MaxSource is the largest text a Parser parses: offsets are 32 bits.
const MaxSource = math.MaxUint32 - 1

// A parse may use CPULimit(len(text)) of CPU time: parseCPUBase plus
// parseCPUPerByte a byte. Tree-sitter's error recovery and its Python
// scanner take time quadratic in the length of some broken texts (a run
// of "..." or of ".", of line continuations, of "from . import (", of
// keywords): 32 KB of line continuations took 2.3 s, 240 KB of unclosed
// imports 3.9 s. Real Python stays far below the limit: torch parses at
// about 0.4 µs a byte, the densest file known (sympy's generated rubi
// tests, 1.5 MB of nested arithmetic) at 2 µs.
const (
	parseCPUBase    = 50 * time.Millisecond
	parseCPUPerByte = 5 * time.Microsecond
)

// CPULimit is the CPU time a parse of n bytes may take. A parse that
// reaches it stops, and its Tree has no nodes and reports GaveUp.
func CPULimit(n int) time.Duration {
	return parseCPUBase + time.Duration(max(n, 0))*parseCPUPerByte
}

// A parse may hold MemoryLimit(len(text)) of memory: its C tree and the
// nodes it flattens into. Tree-sitter's tree of real Python takes 20–90
// bytes a byte of text (torch 2.11's largest file, 1.35 MB: 33 MB; a
// 700 KB table of calls: 61 MB), but valid text made of tiny statements
// takes far more: 1.3 million stacked decorators (3.9 MB) 614 MB, a
// million "a=b" lines 840 MB. A parse over its limit stops like one over
// its CPU time: its Tree has no nodes and reports GaveUp and OverMemory.
//
// The limit is parseMemoryMax, less parseMemoryShrink bytes for every byte
// of text, never under parseMemoryMin: beside the tree the process holds
// up to 10 bytes a byte of a large text of short lines (its copies, its
// line tables, what malloc keeps around each block), so that a document
// and its parse together stay under 100 MB plus 4 times the text.
const (
	parseMemoryMax    = 96 << 20
	parseMemoryShrink = 16
	parseMemoryMin    = 48 << 20
)

// MemoryLimit is the memory a parse of n bytes may hold.
func MemoryLimit(n int) int64 {
	return max(parseMemoryMax-int64(max(n, 0))*parseMemoryShrink, parseMemoryMin)
}

// keepScratch bounds the flatten scratch a Parser keeps between parses
// (in nodes, 48 bytes each: 384 KiB): an idle parser in a pool should not
// hold the memory of the largest file it ever saw. A torch file averages
// about 4,000 named nodes; at 65,536 nodes each of a build's parsers
// held 3 MB for the whole build, since the build parses the largest
// files first.
const keepScratch = 1 << 13

// releaseAfter is the size of text after whose parse the C memory libc
// holds free goes back to the system. The tree of a 1 MB file takes about
// 30 MB of C memory; parsed on a thread of its own, its arena keeps it.
const releaseAfter = 256 << 10

// deleteTree frees a C tree, and for a large text the memory libc then
// holds free.
func deleteTree(ct *C.TSTree, size int) {
	C.ts_tree_delete(ct)
	if size >= releaseAfter {
		releaseFreeMemory()
	}
}

// releaseFreeMemory hands the C memory libc holds free back to the system.
func releaseFreeMemory() { C.syntax_release_free_memory() }

func init() {
	// go-tree-sitter routes every allocation of the C runtime through Go
	// callbacks (C→Go→C per malloc), which makes parsing several times
	// slower; its callbacks end in libc's malloc anyway. Pointing the
	// runtime straight at libc changes nothing but the cost. This is the
	// one place the process's tree-sitter is configured: every package
	// that parses Python imports this one, so the test binaries and the
	// shipped binary run with the same allocator.
	C.syntax_use_libc()
}

// allocatorIsLibc reports whether the runtime allocates with libc's
// malloc, as init set it.
func allocatorIsLibc() bool { return bool(C.syntax_allocator_is_libc()) }

// mallocArenas is how many arenas libc's malloc has made, or -1 where
// that cannot be told.
func mallocArenas() int { return int(C.syntax_arenas()) }

// syntaxArenaMax is the arena bound syntax.c sets (syntax_arena_max).
const syntaxArenaMax = int(C.syntax_arena_max)

// allocateThroughRuntime allocates n bytes as tree-sitter does, and frees
// them: the test of what a failed allocation does.
func allocateThroughRuntime(n uint64) {
	C.free(C.syntax_alloc_checked(C.size_t(n)))
}

// grammar is the Python grammar and its symbol tables, built once at init
// and read-only afterwards.
type grammar struct {
	lang   unsafe.Pointer
	kinds  []uint8 // tree-sitter symbol → Kind, for named symbols
	fields []uint8 // tree-sitter field id → Field
}

var python3 = loadGrammar()

func loadGrammar() *grammar {
	ptr := python.Language()
	l := sitter.NewLanguage(ptr)
	byName := make(map[string]Kind, kindCount)
	for k := KindError; k < kindCount; k++ {
		byName[kindNames[k]] = k
	}
	g := &grammar{lang: ptr, kinds: make([]uint8, l.NodeKindCount())}
	for i := range g.kinds {
		id := uint16(i)
		if l.NodeKindIsNamed(id) {
			g.kinds[i] = uint8(byName[l.NodeKindForId(id)])
		}
	}
	fieldByName := make(map[string]Field, fieldCount)
	for f := FieldNone + 1; f < fieldCount; f++ {
		fieldByName[fieldNames[f]] = f
	}
	g.fields = make([]uint8, l.FieldCount()+1)
	for i := uint32(1); i < uint32(len(g.fields)); i++ {
		g.fields[i] = uint8(fieldByName[l.FieldNameForId(uint16(i))])
	}
	return g
}

// Parser parses Python text into Trees. It reuses its tree-sitter parser
// and scratch memory between calls; it is not safe for concurrent use (use
// one per goroutine, or a Pool). Close frees it; one that is dropped
// without Close is freed by the garbage collector.
type Parser struct {
	ts      *C.TSParser
	scratch []Node  // flatten output, reused while small
	links   []int32 // flatten's last-child and ancestor stacks
	cleanup runtime.Cleanup
	// cpuLimit and memoryLimit replace CPULimit and MemoryLimit when set
	// (by tests that stop parses).
	cpuLimit    func(n int) time.Duration
	memoryLimit func(n int) int64
}

// NewParser returns a Parser for Python.
func NewParser() (*Parser, error) {
	ts := C.syntax_parser_new(python3.lang)
	if ts == nil {
		return nil, errors.New("syntax: tree-sitter parser for Python: grammar rejected")
	}
	p := &Parser{ts: ts}
	p.cleanup = runtime.AddCleanup(p, func(ts *C.TSParser) { C.ts_parser_delete(ts) }, ts)
	return p, nil
}

// renew replaces the tree-sitter parser after a parse that returned no
// tree. A stopped parse must not resume, and tree-sitter 0.25's
// ts_parser_reset forgets the tree of a parse stopped while balancing it
// but not that it was balancing: the next parse would then balance no tree
// and abort the process. A new parser carries nothing over. Should making
// it fail (it cannot once one was made), the Parser is left closed.
func (p *Parser) renew() {
	p.cleanup.Stop()
	C.ts_parser_delete(p.ts)
	p.ts = C.syntax_parser_new(python3.lang)
	if p.ts == nil {
		p.scratch, p.links = nil, nil
		return
	}
	p.cleanup = runtime.AddCleanup(p, func(ts *C.TSParser) { C.ts_parser_delete(ts) }, p.ts)
}

// Close frees the parser. Trees it made stay valid.
func (p *Parser) Close() {
	if p.ts == nil {
		return
	}
	p.cleanup.Stop()
	C.ts_parser_delete(p.ts)
	p.ts = nil
	p.scratch, p.links = nil, nil
}

// Range is a stretch of the text to parse, with the 0-based row and byte
// column of its ends (as Lines.Point gives them).
type Range struct {
	Start, End         int
	StartRow, StartCol int
	EndRow, EndCol     int
}

// Parse parses src. The Tree keeps src without copying it: do not modify
// src while the Tree is in use.
func (p *Parser) Parse(src []byte) *Tree {
	t, _, _ := p.parse(context.Background(), src, nil)
	return t
}

// Visit parses src and calls f with the tree, whose nodes live in the
// parser's scratch memory instead of a copy: for callers that extract what
// they need and drop the tree. f must not keep the tree or its nodes; once
// f returns the tree is emptied and the memory goes to the next parse.
func (p *Parser) Visit(src []byte, f func(*Tree)) { p.VisitRanges(src, nil, f) }

// VisitRanges is Visit of only the given ranges of src, as ParseRanges
// parses them: nodes keep their offsets and positions in src.
func (p *Parser) VisitRanges(src []byte, ranges []Range, f func(*Tree)) {
	t, ct := p.parseC(src, ranges, 0)
	if ct.tree == nil {
		f(t)
		return
	}
	if ct.named > keepScratch {
		// A large tree flattens into C memory, freed as soon as f
		// returns: as Go scratch it would be garbage the size of the
		// tree (about 50 bytes a node) that the heap carries until the
		// next collection, once for every large file a build parses.
		nodes, free := flattenC(ct)
		C.ts_tree_delete(ct.tree) // free hands both back to the system at once
		t.nodes = nodes
		defer func() {
			t.nodes = nil
			free()
		}()
		f(t)
		return
	}
	out := p.flattenScratch(ct)
	deleteTree(ct.tree, ct.size) // the nodes are in Go memory now
	t.nodes = out
	defer func() {
		t.nodes = nil
		p.keep(out)
	}()
	f(t)
}

// textLen is how much of src a parse of ranges reads: all of it without
// ranges.
func textLen(src []byte, ranges []Range) int {
	if len(ranges) == 0 {
		return len(src)
	}
	n := 0
	for _, r := range ranges {
		n += r.End - r.Start
	}
	return n
}

// flattenC writes the named nodes of ct into C memory and returns them
// with the function that frees that memory and hands what libc holds free
// back to the system: after every tree over keepScratch nodes. That trim
// walks and locks every arena (a cold references query on 16 cores took
// 78–96 ms with it, 51–53 ms before keepScratch was lowered); trimming
// less often is faster but was not measured on the host's cold peak
// (docs/GPU_HOST.md).
func flattenC(ct cTree) ([]Node, func()) {
	out := (*C.syntax_node)(C.malloc(C.size_t(max(ct.named, 1)) * C.size_t(C.sizeof_syntax_node)))
	links := (*C.int32_t)(C.malloc(C.size_t(ct.links()) * 4))
	if out == nil || links == nil {
		C.free(unsafe.Pointer(out))
		C.free(unsafe.Pointer(links))
		return nil, func() {}
	}
	n := flattenInto(ct, out, links)
	C.free(unsafe.Pointer(links))
	return unsafe.Slice((*Node)(unsafe.Pointer(out)), n), func() {
		C.free(unsafe.Pointer(out))
		releaseFreeMemory()
	}
}

// ParseRanges parses only the given ranges of src, in order and not
// overlapping, as one program; nodes keep their offsets and positions in
// src.
func (p *Parser) ParseRanges(src []byte, ranges []Range) *Tree {
	t, _, _ := p.parse(context.Background(), src, ranges)
	return t
}

// ParseContext is Parse that gives up when ctx is done, as when a newer
// version of a buffer has arrived; it then returns ctx's error.
func (p *Parser) ParseContext(ctx context.Context, src []byte) (*Tree, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("syntax: parse: %w", err)
	}
	t, _, err := p.parse(ctx, src, nil)
	return t, err
}

// parse returns an empty Tree (no nodes) for text it cannot parse: a
// closed parser, text over MaxSource, a parse over its CPU limit (the
// Tree then reports GaveUp). stopped reports that tree-sitter gave up
// before the end (cancelled, or over its CPU limit).
func (p *Parser) parse(ctx context.Context, src []byte, ranges []Range) (_ *Tree, stopped bool, _ error) {
	var handle C.uintptr_t // 0: not cancellable
	if ctx != nil && ctx.Done() != nil {
		h := cgo.NewHandle(ctx)
		defer h.Delete()
		handle = C.uintptr_t(h)
	}
	t, ct := p.parseC(src, ranges, handle)
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			if ct.tree != nil {
				C.ts_tree_delete(ct.tree)
			}
			return nil, ct.tree == nil, fmt.Errorf("syntax: parse: %w", err)
		}
	}
	if ct.tree == nil {
		return t, p.ts != nil && len(src) <= MaxSource, nil
	}
	if ct.named > keepScratch {
		// The tree's own nodes, flattened straight into them: a copy out
		// of scratch would hold the nodes twice.
		t.nodes = p.flattenNew(ct)
		deleteTree(ct.tree, ct.size)
		return t, false, nil
	}
	out := p.flattenScratch(ct)
	deleteTree(ct.tree, ct.size)
	t.nodes = make([]Node, len(out))
	copy(t.nodes, out)
	p.keep(out)
	return t, false, nil
}

// cTree is a tree tree-sitter made, with the counts flattening allocates
// for.
type cTree struct {
	tree  *C.TSTree // nil: none (see parseC)
	named int       // named nodes
	depth int       // the deepest node's depth
	size  int       // bytes of text parsed (textLen)
}

// links is how many int32 of scratch flattening it takes: the last child
// of each named node, and the ancestor stack.
func (ct cTree) links() int { return ct.named + ct.depth + 1 }

// parseC runs tree-sitter. It returns the Tree to fill and the C tree
// (none for a closed parser, text over MaxSource, a parse cancelled or
// over a limit, the last marking the Tree GaveUp); the caller deletes the
// C tree.
func (p *Parser) parseC(src []byte, ranges []Range, handle C.uintptr_t) (*Tree, cTree) {
	t := &Tree{src: src}
	if p.ts == nil || len(src) > MaxSource {
		return t, cTree{}
	}
	var cr *C.TSRange
	if len(ranges) > 0 {
		size := C.size_t(len(ranges)) * C.size_t(unsafe.Sizeof(C.TSRange{}))
		cr = (*C.TSRange)(C.malloc(size))
		defer C.free(unsafe.Pointer(cr))
		rs := unsafe.Slice(cr, len(ranges))
		for i, r := range ranges {
			rs[i] = C.TSRange{
				start_point: C.TSPoint{row: C.uint32_t(r.StartRow), column: C.uint32_t(r.StartCol)},
				end_point:   C.TSPoint{row: C.uint32_t(r.EndRow), column: C.uint32_t(r.EndCol)},
				start_byte:  C.uint32_t(r.Start),
				end_byte:    C.uint32_t(r.End),
			}
		}
	}
	var text *C.char
	if len(src) > 0 {
		text = (*C.char)(unsafe.Pointer(&src[0]))
	}
	limit := CPULimit
	if p.cpuLimit != nil {
		limit = p.cpuLimit
	}
	memLimit := MemoryLimit
	if p.memoryLimit != nil {
		memLimit = p.memoryLimit
	}
	var count, depth C.uint32_t
	var hasErr C.bool
	var over C.uint8_t
	var peak C.int64_t
	// The limits are those of the text parsed: a range's, not the file's.
	n := textLen(src, ranges)
	ct := C.syntax_parse(p.ts, text, C.uint32_t(len(src)), cr, C.uint32_t(len(ranges)), handle,
		C.uint64_t(max(limit(n), 0)), C.int64_t(memLimit(n)), &count, &depth, &hasErr, &over, &peak)
	t.parseMemory = int64(peak)
	if ct == nil {
		p.renew()
		t.gaveUp, t.overMemory = over != 0, over == C.SYNTAX_OVER_MEMORY
		t.hasError = t.gaveUp
		return t, cTree{}
	}
	c := cTree{tree: ct, named: int(count), depth: int(depth), size: n}
	if flat := int64(c.named)*int64(unsafe.Sizeof(Node{})) + 4*int64(c.links()); int64(peak)+flat > memLimit(n) {
		// The tree fits but its flattened nodes would not.
		deleteTree(ct, n)
		t.gaveUp, t.overMemory, t.hasError = true, true, true
		return t, cTree{}
	}
	t.hasError = bool(hasErr)
	return t, c
}

// flattenScratch writes the named nodes of ct into the parser's scratch
// in one C call, so a Tree is walked from Go without crossing into C
// again. It returns them, in the scratch to hand back to keep.
func (p *Parser) flattenScratch(ct cTree) []Node {
	if ct.named == 0 {
		return p.scratch[:0]
	}
	out, links := p.scratch, p.links
	if cap(out) < ct.named {
		out = make([]Node, ct.named+ct.named/4)
	}
	if cap(links) < ct.links() {
		links = make([]int32, ct.links()+ct.links()/4)
	}
	out, links = out[:ct.named], links[:ct.links()]
	n := flattenInto(ct, (*C.syntax_node)(unsafe.Pointer(&out[0])), (*C.int32_t)(unsafe.Pointer(&links[0])))
	p.links = links[:0]
	return out[:n]
}

// flattenNew writes the named nodes of ct into a slice of their own.
func (p *Parser) flattenNew(ct cTree) []Node {
	out := make([]Node, ct.named)
	links := make([]int32, ct.links())
	n := flattenInto(ct, (*C.syntax_node)(unsafe.Pointer(&out[0])), (*C.int32_t)(unsafe.Pointer(&links[0])))
	return out[:n]
}

// flattenInto writes the named nodes of ct into out (room for ct.named),
// using links (room for ct.links()) as the walk's scratch, and returns how
// many it wrote.
func flattenInto(ct cTree, out *C.syntax_node, links *C.int32_t) int {
	return int(C.syntax_flatten(ct.tree, out, links, (*C.int32_t)(unsafe.Add(unsafe.Pointer(links), 4*ct.named)),
		C.uint32_t(ct.named), C.uint32_t(ct.depth+1),
		(*C.uint8_t)(unsafe.Pointer(&python3.kinds[0])), C.uint32_t(len(python3.kinds)),
		(*C.uint8_t)(unsafe.Pointer(&python3.fields[0])), C.uint32_t(len(python3.fields))))
}

// keep holds on to the scratch for the next parse while it is small.
func (p *Parser) keep(out []Node) {
	if cap(out) <= keepScratch {
		p.scratch = out[:0]
		return
	}
	p.scratch, p.links = nil, nil
}

// Node must match syntax_node byte for byte: this fails to compile otherwise.
var _ = [1]struct{}{}[unsafe.Sizeof(Node{})-C.sizeof_syntax_node]
var _ = [1]struct{}{}[C.sizeof_syntax_node-unsafe.Sizeof(Node{})]
