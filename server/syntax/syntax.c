// The C half of package syntax: parse, and flatten a tree into Go memory
// in one call. See parse.go.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "syntax.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

// The runtime's allocator: libc's, checked. Tree-sitter's code uses what
// its allocator returns without a NULL check (its own default allocator
// aborts on failure); handing it bare malloc turned an allocation that
// failed under an address-space limit into a NULL dereference (SIGSEGV in
// syntax_parse). A failed allocation now ends the process with a message
// that says what ran out; Go's own allocator does the same.
static void syntax_out_of_memory(const char *what, size_t n) {
	fprintf(stderr, "torchlsp: out of memory: the Python parser's %s of %zu bytes failed\n", what, n);
	abort();
}

// The C memory of the parse running on this thread: what its allocations
// hold (net of what it freed) and the most they held. A parse runs on one
// thread from start to end (a cgo call keeps its thread), so a
// thread-local pointer, set for the parse's length, attributes every
// allocation tree-sitter makes to the parse that made it. Tree-sitter's
// trees can take 200 bytes a byte of text (1.3 million stacked decorators,
// 3.9 MB: 800 MB); the progress callback stops a parse whose memory passes
// its limit. Counting needs the size of what is freed, which only glibc
// tells (malloc_usable_size); elsewhere nothing is counted.
typedef struct {
	int64_t live, peak;
} syntax_mem;

static __thread syntax_mem *syntax_mem_cur;

static inline void syntax_mem_count(void *p, int64_t sign) {
#ifdef __GLIBC__
	syntax_mem *m = syntax_mem_cur;
	if (!m || !p) return;
	m->live += sign * (int64_t)malloc_usable_size(p);
	if (m->live > m->peak) m->peak = m->live;
#else
	(void)p;
	(void)sign;
#endif
}

static void *syntax_malloc(size_t n) {
	void *p = malloc(n);
	if (!p && n) syntax_out_of_memory("malloc", n);
	syntax_mem_count(p, 1);
	return p;
}

static void *syntax_calloc(size_t count, size_t size) {
	void *p = calloc(count, size);
	if (!p && count && size) syntax_out_of_memory("calloc", count * size);
	syntax_mem_count(p, 1);
	return p;
}

static void *syntax_realloc(void *old, size_t n) {
	syntax_mem_count(old, -1);
	void *p = realloc(old, n);
	if (!p && n) syntax_out_of_memory("realloc", n);
	syntax_mem_count(p, 1);
	return p;
}

static void syntax_free(void *p) {
	syntax_mem_count(p, -1);
	free(p);
}

// syntax_use_libc makes the runtime allocate with libc directly.
void syntax_use_libc(void) { ts_set_allocator(syntax_malloc, syntax_calloc, syntax_realloc, syntax_free); }

// syntax_bound_arenas sets syntax_arena_max as the program loads: glibc
// makes no arena past the bound, but keeps those it made, and by the
// time Go runs this package's init the runtime's threads have made
// several.
__attribute__((constructor)) static void syntax_bound_arenas(void) {
#ifdef __GLIBC__
	if (!getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, syntax_arena_max);
#endif
}

// syntax_arenas counts glibc's malloc arenas (from malloc_info), or
// returns -1 where that cannot be told.
int syntax_arenas(void) {
#ifdef __GLIBC__
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) return -1;
	int rc = malloc_info(0, f);
	fclose(f);
	int n = -1;
	if (rc == 0 && buf) {
		n = 0;
		for (const char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) n++;
	}
	free(buf);
	return n;
#else
	return -1;
#endif
}
bool syntax_allocator_is_libc(void) { return ts_current_malloc == syntax_malloc; }

// syntax_alloc_checked allocates n bytes through the runtime's allocator
// (for tests: a failure must abort with the message, not return NULL).
void *syntax_alloc_checked(size_t n) { return ts_current_malloc(n); }

// syntax_release_free_memory hands the memory libc holds free back to the
// system. glibc keeps what a thread's arena freed for that arena's next
// allocation: after parsing a large file on several threads, each arena
// would otherwise hold the high-water mark of its own largest tree.
void syntax_release_free_memory(void) {
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

TSParser *syntax_parser_new(const void *lang) {
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

// A cancellable parse asks Go whether its context is done every
// pollEvery progress callbacks (tree-sitter calls back every 100 parse
// operations): often enough to stop within microseconds, rarely enough that
// the C→Go call costs nothing measurable.
enum { pollEvery = 16 };

extern bool syntaxContextDone(uintptr_t ctx); // poll.go

// syntax_thread_cpu_ns is the CPU time the calling thread has used. A
// parse runs on one thread from start to end (a cgo call keeps its
// thread), so the difference of two readings is the parse's own work,
// however busy the machine is.
static uint64_t syntax_thread_cpu_ns(void) {
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct {
	uintptr_t ctx;    // cgo.Handle of the context, 0: not cancellable
	uint32_t calls;
	uint64_t cpu_end; // thread CPU time at which the parse gives up
	int64_t mem_limit; // C memory at which the parse gives up
	syntax_mem *mem;
	uint8_t over;     // SYNTAX_OVER_CPU or SYNTAX_OVER_MEMORY: why it gave up
} syntax_progress;

// syntax_progress_cb stops the parse once it has used its CPU time or its
// memory, or when its context is done. Reading the clock costs a system
// call, a few hundred nanoseconds every 100 parse operations.
static bool syntax_progress_cb(TSParseState *st) {
	syntax_progress *p = st->payload;
	p->calls++;
	if (p->mem->live > p->mem_limit) {
		p->over = SYNTAX_OVER_MEMORY;
		return true;
	}
	if (syntax_thread_cpu_ns() >= p->cpu_end) {
		p->over = SYNTAX_OVER_CPU;
		return true;
	}
	return p->ctx && p->calls % pollEvery == 0 && syntaxContextDone(p->ctx);
}

// syntax_count counts the named nodes of t and the depth of its deepest
// node, so that flattening allocates for them alone (anonymous nodes are
// half a tree and more).
static void syntax_count(TSTree *t, uint32_t *named, uint32_t *deepest) {
	TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0, depth = 0, most = 0;
	for (;;) {
		if (ts_node_is_named(ts_tree_cursor_current_node(&c))) n++;
		if (ts_tree_cursor_goto_first_child(&c)) {
			if (++depth > most) most = depth;
			continue;
		}
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (depth == 0 || !ts_tree_cursor_goto_parent(&c)) goto done;
			depth--;
		}
	}
done:
	ts_tree_cursor_delete(&c);
	*named = n;
	*deepest = most;
}

// syntax_parse parses src, only the given ranges of it when n > 0. It
// stops and returns NULL when the context behind ctx (a cgo.Handle, or 0)
// is done, once the parse has used cpu_limit_ns of thread CPU time, or
// once its C memory passes mem_limit; it then sets *over to say which of
// the limits it reached. *peak is the most C memory the parse held; *count
// and *depth are the tree's named nodes and depth (syntax_count).
TSTree *syntax_parse(TSParser *p, const char *src, uint32_t len, const TSRange *ranges, uint32_t n,
                     uintptr_t ctx, uint64_t cpu_limit_ns, int64_t mem_limit, uint32_t *count, uint32_t *depth,
                     bool *err, uint8_t *over, int64_t *peak) {
	*over = 0;
	*peak = 0;
	if (!ts_parser_set_included_ranges(p, ranges, n)) return NULL;
	syntax_input in = {len ? src : "", len};
	TSInput input = {&in, syntax_read, TSInputEncodingUTF8, NULL};
	syntax_mem mem = {0, 0};
	syntax_progress pr = {ctx, 0, syntax_thread_cpu_ns() + cpu_limit_ns, mem_limit, &mem, 0};
	TSParseOptions opts = {&pr, syntax_progress_cb};
	syntax_mem_cur = &mem;
	TSTree *t = ts_parser_parse_with_options(p, NULL, input, opts);
	syntax_mem_cur = NULL;
	*peak = mem.peak;
	if (n) ts_parser_set_included_ranges(p, NULL, 0);
	if (!t) {
		*over = pr.over; // the caller replaces p: see Parser.renew
		return NULL;
	}
	TSNode root = ts_tree_root_node(t);
	*err = ts_node_has_error(root);
	syntax_count(t, count, depth);
	return t;
}

// syntax_flatten writes the named nodes of t in pre-order into out (room
// for cap, the tree's named nodes) and returns how many it wrote. A named
// node under anonymous ones hangs from its nearest named ancestor. last is
// scratch of cap entries, stack of depth+1 (syntax_count's counts).
uint32_t syntax_flatten(TSTree *t, syntax_node *out, int32_t *last, int32_t *stack, uint32_t cap, uint32_t depth_cap,
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
		if (depth < depth_cap && ts_tree_cursor_goto_first_child(&c)) {
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
