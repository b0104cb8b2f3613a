// Declarations shared by syntax.c and the package's Go files.
#ifndef TORCHLSP_SYNTAX_H
#define TORCHLSP_SYNTAX_H

#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>

// From the tree-sitter runtime (v0.25 ABI) that
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

// Why a parse gave up (syntax_parse's *over).
enum { SYNTAX_OVER_CPU = 1, SYNTAX_OVER_MEMORY = 2 };

// One node of a flattened tree; Node mirrors it in Go.
typedef struct {
	uint32_t start, end;
	uint32_t start_row, start_col, end_row, end_col;
	int32_t parent, first, next;
	uint8_t kind, field, flags, pad;
} syntax_node;

enum { SYNTAX_MISSING = 1, SYNTAX_IN_ERROR = 2 };


// syntax_arena_max is how many malloc arenas glibc may make. By default it
// makes one for each thread that allocates while the others are busy, up
// to 8 a core, and each arena keeps what its thread freed. Go runs a cgo
// call on whichever thread is free, so the trees of a build spread over
// as many arenas as threads the runtime starts: on 16 cores the cold
// server's peak was 7–10 MB higher than with 1, 2, 4 or 8 arenas, which
// peak alike. Four let the four workers of a build or a query allocate
// at once (on 16 cores a cold references query took 76–112 ms with one or
// two, 60 ms with four or eight). MALLOC_ARENA_MAX in the environment
// still rules.
enum { syntax_arena_max = 4 };

void syntax_use_libc(void);
bool syntax_allocator_is_libc(void);
int syntax_arenas(void);
void *syntax_alloc_checked(size_t n);
void syntax_release_free_memory(void);
TSParser *syntax_parser_new(const void *lang);
TSTree *syntax_parse(TSParser *p, const char *src, uint32_t len, const TSRange *ranges, uint32_t n,
                     uintptr_t ctx, uint64_t cpu_limit_ns, int64_t mem_limit, uint32_t *count, uint32_t *depth,
                     bool *err, uint8_t *over, int64_t *peak);
uint32_t syntax_flatten(TSTree *t, syntax_node *out, int32_t *last, int32_t *stack, uint32_t cap, uint32_t depth_cap,
                        const uint8_t *kinds, uint32_t nkinds, const uint8_t *fields, uint32_t nfields);

#endif
