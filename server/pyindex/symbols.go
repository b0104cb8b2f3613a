package pyindex

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// Workspace symbols: every module, and every function, class and variable
// a module or class body binds, matched against what the user typed.
// The index holds them already (the bindings of each file): a query is
// one pass over them, no parse once the index is built.

// Ranks of a match, best first.
const (
	RankExact      = iota // the name is the query
	RankExactFold         // the name is the query, ignoring case
	RankPrefix            // the name starts with the query
	RankPrefixFold        // the name starts with the query, ignoring case
	RankSubstring         // the name holds the query, ignoring case
	RankFuzzy             // the query's letters appear in the name in order, ignoring case
)

// SymbolQuery is what the user typed, ready to rank names with. A query
// with dots ("cudagraph_trees.get_obj") matches its last part against
// the name, and what comes before must appear in the qualified name
// around it.
type SymbolQuery struct {
	name      string
	lower     string
	container string // lower case; "" for none
}

// NewSymbolQuery prepares text; an empty query matches nothing.
func NewSymbolQuery(text string) SymbolQuery {
	text = strings.TrimSpace(text)
	q := SymbolQuery{name: text}
	if i := strings.LastIndexByte(text, '.'); i >= 0 {
		q.name, q.container = text[i+1:], strings.ToLower(text[:i])
	}
	q.lower = strings.ToLower(q.name)
	return q
}

// Rank says how well name matches; ok is false when it does not.
func (q SymbolQuery) Rank(name string) (rank int, ok bool) {
	if q.name == "" {
		return 0, q.container != "" && name != ""
	}
	switch {
	case name == q.name:
		return RankExact, true
	case len(name) == len(q.name) && strings.EqualFold(name, q.name):
		return RankExactFold, true
	case strings.HasPrefix(name, q.name):
		return RankPrefix, true
	case len(name) >= len(q.name) && strings.EqualFold(name[:len(q.name)], q.name):
		return RankPrefixFold, true
	case containsFold(name, q.lower):
		return RankSubstring, true
	case subsequenceFold(name, q.lower):
		return RankFuzzy, true
	}
	return 0, false
}

// Container reports whether the qualified name around a match holds the
// part of the query before its last dot.
func (q SymbolQuery) Container(qualContainer string) bool {
	return q.container == "" || containsFold(qualContainer, q.container)
}

// containsFold reports whether s holds lower (lower case ASCII) ignoring
// the case of s's ASCII letters.
func containsFold(s, lower string) bool {
	if len(lower) == 0 {
		return true
	}
	for i := 0; i+len(lower) <= len(s); i++ {
		if foldByte(s[i]) != lower[0] {
			continue
		}
		j := 1
		for ; j < len(lower) && foldByte(s[i+j]) == lower[j]; j++ {
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

func subsequenceFold(s, lower string) bool {
	j := 0
	for i := 0; i < len(s) && j < len(lower); i++ {
		if foldByte(s[i]) == lower[j] {
			j++
		}
	}
	return j == len(lower)
}

func foldByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// SymbolHit is a symbol that matched a query, with its rank.
type SymbolHit struct {
	Symbol Symbol // described without its docstring
	Rank   int
}

// CompareHits orders hits best first: by rank, public names before
// private ones, shorter names, a .py before a .pyi, then by qualified
// name and place.
func CompareHits(a, b SymbolHit) int {
	return cmp.Or(
		cmp.Compare(a.Rank, b.Rank),
		cmp.Compare(private(a.Symbol.Name), private(b.Symbol.Name)),
		cmp.Compare(len(a.Symbol.Name), len(b.Symbol.Name)),
		cmp.Compare(boolInt(a.Symbol.IsStub), boolInt(b.Symbol.IsStub)),
		cmp.Compare(a.Symbol.Qualname, b.Symbol.Qualname),
		cmp.Compare(a.Symbol.Path, b.Symbol.Path),
		cmp.Compare(a.Symbol.Line, b.Symbol.Line),
	)
}

func private(name string) int { return boolInt(strings.HasPrefix(name, "_")) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// symbolCand is a match not yet described.
type symbolCand struct {
	rank int
	f    *fileState
	b    *binding // nil for the module itself
	mod  *module
	path string // b's dotted path in the module
}

func (c symbolCand) hit(ix *Index) SymbolHit {
	t := target{mod: c.mod, file: c.f, b: c.b, path: c.path}
	return SymbolHit{Symbol: ix.symbolOf(t, false), Rank: c.rank}
}

// Symbols finds the index's symbols that match q, the best limit of them
// in CompareHits order. Files not parsed yet are parsed first (once).
func (ix *Index) Symbols(ctx context.Context, q SymbolQuery, limit int) ([]SymbolHit, error) {
	if limit <= 0 || q.name == "" && q.container == "" {
		return nil, nil
	}
	var cands []symbolCand
	var hits []SymbolHit
	flush := func() {
		for _, c := range cands {
			hits = append(hits, c.hit(ix))
		}
		cands = cands[:0]
		hits = dedupeHits(hits)
		slices.SortFunc(hits, CompareHits)
		if len(hits) > limit {
			hits = hits[:limit]
		}
	}
	// worst is the rank no kept hit can improve on once limit are kept
	// with a better one: a cheap filter before describing.
	worst := RankFuzzy
	add := func(c symbolCand) {
		if c.rank > worst {
			return
		}
		cands = append(cands, c)
		if len(cands) >= 4*limit {
			flush()
			if len(hits) == limit {
				worst = hits[len(hits)-1].Rank
			}
		}
	}
	// On a cold start, only the files whose text holds a word the query
	// matches are parsed (in parallel): every binding is such a word, so
	// the others define nothing that matches.
	candidate, err := ix.filesMatching(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("pyindex: symbols: %w", err)
	}
	var unparsed []*fileState
	for i, f := range ix.files {
		if candidate[i] && f.data.Load() == nil {
			unparsed = append(unparsed, f)
		}
	}
	if err := ix.parseFiles(ctx, unparsed, min(max(runtime.GOMAXPROCS(0), 1), maxBuildWorkers)); err != nil {
		return nil, fmt.Errorf("pyindex: symbols: %w", err)
	}
	for i, f := range ix.files {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("pyindex: symbols: %w", ctx.Err())
		}
		m := ix.modules[f.module]
		if m == nil {
			continue
		}
		if m.py == f || m.py == nil && m.pyi == f {
			name := lastName(m.name)
			if r, ok := q.Rank(name); ok && q.Container(parentName(m.name)) {
				add(symbolCand{rank: r, f: f, mod: m})
			}
		}
		if candidate[i] {
			ix.symbolsIn(q, m, f, ix.loadIn(f, ix.budget).bindings, "", add)
		}
	}
	flush()
	return hits, nil
}

// symbolsIn matches the bindings of a module or class body (path is the
// class's dotted path, "" for the module) and the members of its
// classes.
func (ix *Index) symbolsIn(q SymbolQuery, m *module, f *fileState, bs []binding, path string, add func(symbolCand)) {
	for i := range bs {
		b := &bs[i]
		if b.kind == KindImport {
			continue
		}
		r, ok := q.Rank(b.name)
		isClass := b.kind == KindClass && len(b.members) > 0
		if !ok && !isClass {
			continue
		}
		p := b.name
		if path != "" {
			p = path + "." + b.name
		}
		if ok {
			container := m.name
			if path != "" {
				container += "." + path
			}
			if q.Container(container) {
				add(symbolCand{rank: r, f: f, b: b, mod: m, path: p})
			}
		}
		if isClass {
			ix.symbolsIn(q, m, f, b.members, p, add)
		}
	}
}

// dedupeHits keeps, of the hits that name one qualified name in one file
// (a name bound several times, @overload stubs), the last binding.
func dedupeHits(hits []SymbolHit) []SymbolHit {
	type key struct{ path, qualname string }
	at := make(map[key]int, len(hits))
	out := hits[:0]
	for _, h := range hits {
		k := key{h.Symbol.Path, h.Symbol.Qualname}
		if i, ok := at[k]; ok {
			if h.Symbol.Line > out[i].Symbol.Line {
				out[i] = h
			}
			continue
		}
		at[k] = len(out)
		out = append(out, h)
	}
	return out
}
