package gates

/*
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

// Declarations from the tree-sitter runtime (v0.25 ABI) that
// github.com/tree-sitter/go-tree-sitter compiles into the binary.
typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
typedef struct TSLanguage TSLanguage;
typedef struct { uint32_t row, column; } TSPoint;
typedef struct { uint32_t context[4]; const void *id; const TSTree *tree; } TSNode;
typedef struct { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;
extern void ts_set_allocator(void *(*)(size_t), void *(*)(size_t, size_t), void *(*)(void *, size_t), void (*)(void *));
extern TSParser *ts_parser_new(void);
extern void ts_parser_delete(TSParser *);
extern bool ts_parser_set_language(TSParser *, const TSLanguage *);
extern TSTree *ts_parser_parse_string(TSParser *, const TSTree *, const char *, uint32_t);
typedef struct { TSPoint start_point, end_point; uint32_t start_byte, end_byte; } TSRange;
extern bool ts_parser_set_included_ranges(TSParser *, const TSRange *, uint32_t);
extern void ts_tree_delete(TSTree *);
extern TSNode ts_tree_root_node(const TSTree *);
extern uint32_t ts_node_descendant_count(TSNode);
extern bool ts_node_has_error(TSNode);
extern uint16_t ts_node_symbol(TSNode);
extern bool ts_node_is_named(TSNode);
extern uint32_t ts_node_start_byte(TSNode);
extern uint32_t ts_node_end_byte(TSNode);
extern TSPoint ts_node_start_point(TSNode);
extern TSPoint ts_node_end_point(TSNode);
extern TSTreeCursor ts_tree_cursor_new(TSNode);
extern void ts_tree_cursor_delete(TSTreeCursor *);
extern TSNode ts_tree_cursor_current_node(const TSTreeCursor *);
extern uint16_t ts_tree_cursor_current_field_id(const TSTreeCursor *);
extern bool ts_tree_cursor_goto_first_child(TSTreeCursor *);
extern bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *);
extern bool ts_tree_cursor_goto_parent(TSTreeCursor *);

// One node of a flattened tree; layout mirrored by flatNode in Go.
typedef struct {
	uint16_t sym, field;
	uint8_t named, pad[3];
	uint32_t sb, eb, srow, scol, erow;
	int32_t parent, first, next, last;
} gnode;

static void gates_use_libc_allocator(void) { ts_set_allocator(malloc, calloc, realloc, free); }

static TSParser *gates_parser_new(const void *lang) {
	TSParser *p = ts_parser_new();
	if (p && !ts_parser_set_language(p, (const TSLanguage *)lang)) {
		ts_parser_delete(p);
		return NULL;
	}
	return p;
}

// gates_parse parses src, or only the given ranges of it when n > 0.
static TSTree *gates_parse(TSParser *p, const char *src, uint32_t len, const TSRange *ranges, uint32_t n,
                           uint32_t *count, bool *err) {
	if (!ts_parser_set_included_ranges(p, ranges, n)) return NULL;
	TSTree *t = ts_parser_parse_string(p, NULL, src, len);
	ts_parser_set_included_ranges(p, NULL, 0);
	if (!t) return NULL;
	TSNode root = ts_tree_root_node(t);
	*count = ts_node_descendant_count(root);
	*err = ts_node_has_error(root);
	return t;
}

static void gates_emit(gnode *out, int32_t i, TSNode n, uint16_t field, int32_t parent) {
	gnode *g = &out[i];
	TSPoint s = ts_node_start_point(n), e = ts_node_end_point(n);
	g->sym = ts_node_symbol(n);
	g->field = field;
	g->named = ts_node_is_named(n);
	g->sb = ts_node_start_byte(n);
	g->eb = ts_node_end_byte(n);
	g->srow = s.row; g->scol = s.column; g->erow = e.row;
	g->parent = parent; g->first = -1; g->next = -1; g->last = -1;
	if (parent >= 0) {
		gnode *p = &out[parent];
		if (p->last >= 0) out[p->last].next = i; else p->first = i;
		p->last = i;
	}
}

// gates_flatten writes the tree's nodes in pre-order; returns how many.
static uint32_t gates_flatten(TSTree *t, gnode *out, uint32_t cap) {
	TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0;
	int32_t cur = 0;
	gates_emit(out, n++, ts_tree_cursor_current_node(&c), 0, -1);
	while (n < cap) {
		if (ts_tree_cursor_goto_first_child(&c)) {
			gates_emit(out, n, ts_tree_cursor_current_node(&c), ts_tree_cursor_current_field_id(&c), cur);
			cur = n++;
			continue;
		}
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) goto done;
			cur = out[cur].parent;
		}
		gates_emit(out, n, ts_tree_cursor_current_node(&c), ts_tree_cursor_current_field_id(&c), out[cur].parent);
		cur = n++;
	}
done:
	ts_tree_cursor_delete(&c);
	return n;
}
*/
import "C"

import (
	"errors"
	"unsafe"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// go-tree-sitter routes every allocation of the C runtime through Go
// callbacks (C→Go→C per malloc), which made parsing several times slower.
// Its default callbacks end in libc's malloc anyway, so pointing the runtime
// straight at libc changes nothing but the cost.
func init() {
	C.gates_use_libc_allocator()
}

// grammar holds the Python grammar's kind and field tables.
type grammar struct {
	lang   unsafe.Pointer
	kinds  []string
	fields map[string]uint16
}

func newGrammar() *grammar {
	ptr := python.Language()
	l := sitter.NewLanguage(ptr)
	g := &grammar{lang: ptr, fields: map[string]uint16{}}
	n := l.NodeKindCount()
	g.kinds = make([]string, n)
	for i := uint32(0); i < n; i++ {
		g.kinds[i] = l.NodeKindForId(uint16(i))
	}
	for i := uint32(1); i <= l.FieldCount(); i++ {
		g.fields[l.FieldNameForId(uint16(i))] = uint16(i)
	}
	return g
}

// parser is one tree-sitter parser; it is not safe for concurrent use.
type parser struct {
	g    *grammar
	p    *C.TSParser
	flat []flatNode // scratch the C walk fills, reused across parses
}

func newParser(g *grammar) (*parser, error) {
	p := C.gates_parser_new(g.lang)
	if p == nil {
		return nil, errors.New("gates: tree-sitter parser for Python")
	}
	return &parser{g: g, p: p}, nil
}

func (p *parser) Close() {
	if p.p != nil {
		C.ts_parser_delete(p.p)
		p.p = nil
	}
}

// flatNode mirrors gnode; tree is set on the Go side after the copy.
type flatNode struct {
	sym, field             uint16
	named                  uint8
	_                      [3]uint8
	sb, eb, srow, scol, er uint32
	parent, first, next    int32
	last                   int32
}

// flatNode must match gnode byte for byte: this fails to compile otherwise.
var _ = [1]struct{}{}[unsafe.Sizeof(flatNode{})-C.sizeof_gnode]

// node is a node of a flattened tree.
type node struct {
	flatNode
	t *tree
}

// tree is a parsed piece flattened into Go memory: walking it costs no cgo.
type tree struct {
	g        *grammar
	nodes    []node
	hasError bool
}

// span is a byte range of a source with its 0-based start and end lines
// and columns, for parsing part of a file in place.
type span struct {
	start, end         int
	startRow, startCol int
	endRow, endCol     int
}

// parse parses b and flattens the tree.
func (p *parser) parse(b []byte) *tree { return p.parseSpans(b, nil) }

// parseSpans parses only the spans of b (all of b when spans is empty);
// nodes keep their positions in b.
func (p *parser) parseSpans(b []byte, spans []span) *tree {
	if len(b) == 0 {
		b = []byte("\n")
	}
	var count C.uint32_t
	var hasErr C.bool
	var ranges *C.TSRange
	if len(spans) > 0 {
		rs := (*[1 << 28]C.TSRange)(C.malloc(C.size_t(len(spans)) * C.size_t(unsafe.Sizeof(C.TSRange{}))))[:len(spans):len(spans)]
		defer C.free(unsafe.Pointer(&rs[0]))
		for i, sp := range spans {
			rs[i] = C.TSRange{
				start_point: C.TSPoint{row: C.uint32_t(sp.startRow), column: C.uint32_t(sp.startCol)},
				end_point:   C.TSPoint{row: C.uint32_t(sp.endRow), column: C.uint32_t(sp.endCol)},
				start_byte:  C.uint32_t(sp.start),
				end_byte:    C.uint32_t(sp.end),
			}
		}
		ranges = &rs[0]
	}
	cs := (*C.char)(unsafe.Pointer(&b[0]))
	ct := C.gates_parse(p.p, cs, C.uint32_t(len(b)), ranges, C.uint32_t(len(spans)), &count, &hasErr)
	if ct == nil {
		return &tree{g: p.g}
	}
	defer C.ts_tree_delete(ct)
	if cap(p.flat) < int(count) {
		p.flat = make([]flatNode, int(count)+int(count)/4)
	}
	flat := p.flat[:int(count)]
	n := 0
	if count > 0 {
		n = int(C.gates_flatten(ct, (*C.gnode)(unsafe.Pointer(&flat[0])), count))
	}
	t := &tree{g: p.g, hasError: bool(hasErr), nodes: make([]node, n)}
	for i := 0; i < n; i++ {
		t.nodes[i] = node{flatNode: flat[i], t: t}
	}
	return t
}

// Root returns the module node.
func (t *tree) Root() *node {
	if len(t.nodes) == 0 {
		return nil
	}
	return &t.nodes[0]
}

func (t *tree) at(i int32) *node {
	if i < 0 {
		return nil
	}
	return &t.nodes[i]
}

// Kind is the node's grammar type, as tree-sitter names it.
func (n *node) Kind() string {
	if int(n.sym) >= len(n.t.g.kinds) {
		return "ERROR" // ts_builtin_sym_error is the largest symbol id
	}
	return n.t.g.kinds[n.sym]
}

// IsNamed is false for punctuation and keywords.
func (n *node) IsNamed() bool { return n.named != 0 }

// StartByte and EndByte delimit the node in its piece.
func (n *node) StartByte() uint { return uint(n.sb) }

// EndByte is the end of the node in its piece.
func (n *node) EndByte() uint { return uint(n.eb) }

// Row and Col give the node's 0-based start; EndRow its last line.
func (n *node) Row() int    { return int(n.srow) }
func (n *node) Col() int    { return int(n.scol) }
func (n *node) EndRow() int { return int(n.er) }

// Parent returns the enclosing node, nil at the root.
func (n *node) Parent() *node { return n.t.at(n.parent) }

// ChildByFieldName returns the first child in the named field.
func (n *node) ChildByFieldName(name string) *node {
	id, ok := n.t.g.fields[name]
	if !ok {
		return nil
	}
	for c := n.t.at(n.first); c != nil; c = c.t.at(c.next) {
		if c.field == id {
			return c
		}
	}
	return nil
}

// NamedChildren lists the named children.
func (n *node) NamedChildren() []*node {
	var out []*node
	for c := n.t.at(n.first); c != nil; c = c.t.at(c.next) {
		if c.named != 0 {
			out = append(out, c)
		}
	}
	return out
}

// NamedChildCount counts the named children.
func (n *node) NamedChildCount() int {
	k := 0
	for c := n.t.at(n.first); c != nil; c = c.t.at(c.next) {
		if c.named != 0 {
			k++
		}
	}
	return k
}

// NamedChild returns the i-th named child or nil.
func (n *node) NamedChild(i int) *node {
	for c := n.t.at(n.first); c != nil; c = c.t.at(c.next) {
		if c.named != 0 {
			if i == 0 {
				return c
			}
			i--
		}
	}
	return nil
}
