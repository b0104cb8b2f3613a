package syntax

/*
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>

// Declarations from the tree-sitter runtime (v0.25 ABI) that
// github.com/tree-sitter/go-tree-sitter compiles into the binary.
typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
typedef struct TSLanguage TSLanguage;
typedef struct { uint32_t row, column; } TSPoint;
typedef struct { TSPoint start_point, end_point; uint32_t start_byte, end_byte; } TSRange;
typedef struct { uint32_t context[4]; const void *id; const TSTree *tree; } TSNode;
typedef struct { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;
typedef enum { TSInputEncodingUTF8 = 0 } TSInputEncoding;
typedef uint32_t (*DecodeFunction)(const uint8_t *string, uint32_t length, int32_t *code_point);
typedef struct {
	void *payload;
	const char *(*read)(void *payload, uint32_t byte_index, TSPoint position, uint32_t *bytes_read);
	TSInputEncoding encoding;
	DecodeFunction decode;
} TSInput;
typedef struct { void *payload; uint32_t current_byte_offset; bool has_error; } TSParseState;
typedef struct { void *payload; bool (*progress_callback)(TSParseState *state); } TSParseOptions;

extern void ts_set_allocator(void *(*)(size_t), void *(*)(size_t, size_t), void *(*)(void *, size_t), void (*)(void *));
extern void *(*ts_current_malloc)(size_t);
extern TSParser *ts_parser_new(void);
extern void ts_parser_delete(TSParser *);
extern bool ts_parser_set_language(TSParser *, const TSLanguage *);
extern bool ts_parser_set_included_ranges(TSParser *, const TSRange *, uint32_t);
extern void ts_parser_reset(TSParser *);
extern TSTree *ts_parser_parse_with_options(TSParser *, const TSTree *, TSInput, TSParseOptions);
extern void ts_tree_delete(TSTree *);
extern TSNode ts_tree_root_node(const TSTree *);
extern uint32_t ts_node_descendant_count(TSNode);
extern bool ts_node_has_error(TSNode);
extern bool ts_node_is_named(TSNode);
extern bool ts_node_is_missing(TSNode);
extern uint16_t ts_node_symbol(TSNode);
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

// One node of a flattened tree; Node mirrors it in Go.
typedef struct {
	uint32_t start, end;
	uint32_t start_row, start_col, end_row, end_col;
	int32_t parent, first, next;
	uint8_t kind, field, flags, pad;
} syntax_node;

enum { SYNTAX_MISSING = 1, SYNTAX_IN_ERROR = 2 };

// syntax_use_libc makes the runtime allocate with libc directly.
static void syntax_use_libc(void) { ts_set_allocator(malloc, calloc, realloc, free); }
static bool syntax_allocator_is_libc(void) { return ts_current_malloc == malloc; }

static TSParser *syntax_parser_new(const void *lang) {
	TSParser *p = ts_parser_new();
	if (p && !ts_parser_set_language(p, (const TSLanguage *)lang)) {
		ts_parser_delete(p);
		return NULL;
	}
	return p;
}

// The text is read in place: one chunk, the rest of the buffer.
typedef struct { const char *src; uint32_t len; } syntax_input;

static const char *syntax_read(void *payload, uint32_t byte, TSPoint pos, uint32_t *n) {
	const syntax_input *in = payload;
	if (byte >= in->len) {
		*n = 0;
		return "";
	}
	*n = in->len - byte;
	return in->src + byte;
}

// A parse stops when *cancel holds its generation: Go stores it there
// (atomically, in Go memory) when the parse's context ends.
typedef struct { const uint64_t *cancel; uint64_t gen; } syntax_progress;

static bool syntax_cancelled(TSParseState *st) {
	const syntax_progress *p = st->payload;
	return __atomic_load_n(p->cancel, __ATOMIC_RELAXED) == p->gen;
}

// syntax_parse parses src, only the given ranges of it when n > 0. With
// cancel set it can be stopped; a stopped parse returns NULL.
static TSTree *syntax_parse(TSParser *p, const char *src, uint32_t len, const TSRange *ranges, uint32_t n,
                            const uint64_t *cancel, uint64_t gen, uint32_t *count, bool *err) {
	if (!ts_parser_set_included_ranges(p, ranges, n)) return NULL;
	syntax_input in = {len ? src : "", len};
	TSInput input = {&in, syntax_read, TSInputEncodingUTF8, NULL};
	syntax_progress pr = {cancel, gen};
	TSParseOptions opts = {&pr, cancel ? syntax_cancelled : NULL};
	TSTree *t = ts_parser_parse_with_options(p, NULL, input, opts);
	if (n) ts_parser_set_included_ranges(p, NULL, 0);
	if (!t) {
		ts_parser_reset(p); // a stopped parse would resume otherwise
		return NULL;
	}
	TSNode root = ts_tree_root_node(t);
	*count = ts_node_descendant_count(root);
	*err = ts_node_has_error(root);
	return t;
}

// syntax_flatten writes the named nodes of t in pre-order into out (room
// for cap, the tree's descendant count) and returns how many it wrote. A
// named node under anonymous ones hangs from its nearest named ancestor.
// last and stack are scratch of cap entries each.
static uint32_t syntax_flatten(TSTree *t, syntax_node *out, int32_t *last, int32_t *stack, uint32_t cap,
                               const uint8_t *kinds, uint32_t nkinds, const uint8_t *fields, uint32_t nfields) {
	TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0, depth = 0;
	int32_t anc = -1;
	for (;;) {
		TSNode node = ts_tree_cursor_current_node(&c);
		int32_t cur = -1;
		if (ts_node_is_named(node) && n < cap) {
			cur = (int32_t)n++;
			syntax_node *g = &out[cur];
			uint16_t sym = ts_node_symbol(node);
			uint16_t fid = ts_tree_cursor_current_field_id(&c);
			TSPoint s = ts_node_start_point(node), e = ts_node_end_point(node);
			g->start = ts_node_start_byte(node);
			g->end = ts_node_end_byte(node);
			g->start_row = s.row;
			g->start_col = s.column;
			g->end_row = e.row;
			g->end_col = e.column;
			g->kind = sym < nkinds ? kinds[sym] : (sym == UINT16_MAX ? 1 : 0); // 1: KindError
			g->field = fid < nfields ? fields[fid] : 0;
			g->flags = ts_node_is_missing(node) ? SYNTAX_MISSING : 0;
			g->pad = 0;
			g->parent = anc;
			g->first = -1;
			g->next = -1;
			last[cur] = -1;
			if (anc >= 0) {
				if (out[anc].kind == 1 || (out[anc].flags & SYNTAX_IN_ERROR)) g->flags |= SYNTAX_IN_ERROR;
				if (last[anc] >= 0) out[last[anc]].next = cur; else out[anc].first = cur;
				last[anc] = cur;
			}
		}
		if (ts_tree_cursor_goto_first_child(&c)) {
			stack[depth++] = anc;
			if (cur >= 0) anc = cur;
			continue;
		}
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (depth == 0 || !ts_tree_cursor_goto_parent(&c)) goto done;
			anc = stack[--depth];
		}
	}
done:
	ts_tree_cursor_delete(&c);
	return n;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"

	sitter "github.com/tree-sitter/go-tree-sitter"
	python "github.com/tree-sitter/tree-sitter-python/bindings/go"
)

// MaxSource is the largest text a Parser parses: offsets are 32 bits.
const MaxSource = math.MaxUint32 - 1

// keepScratch bounds the flatten scratch a Parser keeps between parses
// (in nodes, about 48 bytes each): an idle parser in a pool should not
// hold the memory of the largest file it ever saw.
const keepScratch = 1 << 16

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
	gen     uint64         // generation of the latest cancellable parse
	cancel  *atomic.Uint64 // the generation to stop; a context's AfterFunc stores it
	scratch []Node         // flatten output, reused while small
	links   []int32        // flatten's last-child and ancestor stacks
	cleanup runtime.Cleanup
}

// NewParser returns a Parser for Python.
func NewParser() (*Parser, error) {
	ts := C.syntax_parser_new(python3.lang)
	if ts == nil {
		return nil, errors.New("syntax: tree-sitter parser for Python: grammar rejected")
	}
	p := &Parser{ts: ts, cancel: new(atomic.Uint64)}
	p.cleanup = runtime.AddCleanup(p, func(ts *C.TSParser) { C.ts_parser_delete(ts) }, ts)
	return p, nil
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
	t, _, _ := p.parse(nil, src, nil)
	return t
}

// ParseRanges parses only the given ranges of src, in order and not
// overlapping, as one program; nodes keep their offsets and positions in
// src.
func (p *Parser) ParseRanges(src []byte, ranges []Range) *Tree {
	t, _, _ := p.parse(nil, src, ranges)
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
// closed parser, text over MaxSource. stopped reports that tree-sitter
// gave up before the end (cancelled).
func (p *Parser) parse(ctx context.Context, src []byte, ranges []Range) (_ *Tree, stopped bool, _ error) {
	t := &Tree{src: src}
	if p.ts == nil || len(src) > MaxSource {
		return t, false, nil
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
	var cancel *C.uint64_t
	if ctx != nil && ctx.Done() != nil {
		// A late AfterFunc stores an old generation, which stops nothing.
		p.gen++
		gen, flag := p.gen, p.cancel
		cancel = (*C.uint64_t)(unsafe.Pointer(flag))
		stop := context.AfterFunc(ctx, func() { flag.Store(gen) })
		defer stop()
	}
	var text *C.char
	if len(src) > 0 {
		text = (*C.char)(unsafe.Pointer(&src[0]))
	}
	var count C.uint32_t
	var hasErr C.bool
	ct := C.syntax_parse(p.ts, text, C.uint32_t(len(src)), cr, C.uint32_t(len(ranges)),
		cancel, C.uint64_t(p.gen), &count, &hasErr)
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			if ct != nil {
				C.ts_tree_delete(ct)
			}
			return nil, ct == nil, fmt.Errorf("syntax: parse: %w", err)
		}
	}
	if ct == nil {
		return t, true, nil
	}
	defer C.ts_tree_delete(ct)
	t.hasError = bool(hasErr)
	t.nodes = p.flatten(ct, int(count))
	return t, false, nil
}

// flatten copies the named nodes of ct into Go memory in one C call: a
// Tree is walked from Go without crossing into C again.
func (p *Parser) flatten(ct *C.TSTree, count int) []Node {
	if count == 0 {
		return nil
	}
	out, links := p.scratch, p.links
	if cap(out) < count {
		out = make([]Node, count+count/4)
		links = make([]int32, 2*len(out))
	}
	out, links = out[:count], links[:2*count]
	n := int(C.syntax_flatten(ct,
		(*C.syntax_node)(unsafe.Pointer(&out[0])),
		(*C.int32_t)(unsafe.Pointer(&links[0])),
		(*C.int32_t)(unsafe.Pointer(&links[count])),
		C.uint32_t(count),
		(*C.uint8_t)(unsafe.Pointer(&python3.kinds[0])), C.uint32_t(len(python3.kinds)),
		(*C.uint8_t)(unsafe.Pointer(&python3.fields[0])), C.uint32_t(len(python3.fields))))
	nodes := make([]Node, n)
	copy(nodes, out[:n])
	if cap(out) <= keepScratch {
		p.scratch, p.links = out[:0], links[:0]
	} else {
		p.scratch, p.links = nil, nil
	}
	return nodes
}

// Node must match syntax_node byte for byte: this fails to compile otherwise.
var _ = [1]struct{}{}[unsafe.Sizeof(Node{})-C.sizeof_syntax_node]
var _ = [1]struct{}{}[C.sizeof_syntax_node-unsafe.Sizeof(Node{})]
