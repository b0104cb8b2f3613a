package pyindex

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/sourcegraph/conc/pool"
	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// Every file's entry in the index keeps the set of identifiers its code
// mentions, as sorted 32-bit hashes: the postings a reference query reads
// to parse only the files that can name what it looks for. A hash that
// two identifiers share makes a file a candidate it need not be, never
// the reverse, so the answers stay exact. Comments and strings hold no
// identifiers of the tree: they cost nothing here.

const (
	// maxIdentsPerFile bounds the distinct identifiers kept for one file;
	// a file with more is a candidate of every query (identsAll). Torch
	// 2.11's largest file mentions about 6,000.
	maxIdentsPerFile = 1 << 16
	// maxIdentsPerIndex bounds the hashes of a whole index (4 bytes each,
	// 32 MB at most); the files parsed past it are candidates of every
	// query. Torch 2.11 holds about 700,000.
	maxIdentsPerIndex = 8 << 20
)

// identHash is the FNV-1a hash of an identifier; the cache file keeps
// these, so it never changes without a new cache version.
func identHash[T string | []byte](s T) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// maxIdentScratch bounds the scratch buffer a parse keeps for the next
// one to reuse (4 bytes a hash, 1 MB); a file with more identifier nodes
// collects them in a buffer of its own that the collector takes back.
const maxIdentScratch = 1 << 18

// identHashes collects the distinct identifiers of a tree, hashed and
// sorted; all is set instead when there are more than limit. scratch
// holds every identifier's hash, repeats included, while they are sorted
// and made distinct; the result is a copy of exactly the distinct ones,
// so the file keeps no spare capacity and the scratch serves the next
// file.
func identHashes(t *syntax.Tree, limit int, scratch *[]uint32) (hashes []uint32, all bool) {
	return distinctHashes(appendIdentHashes((*scratch)[:0], t), limit, scratch)
}

// appendIdentHashes appends the hash of every identifier of t to out.
func appendIdentHashes(out []uint32, t *syntax.Tree) []uint32 {
	nodes := t.Nodes()
	for i := range nodes {
		if nodes[i].Kind == syntax.KindIdentifier {
			out = append(out, identHash(t.Bytes(int32(i))))
		}
	}
	return out
}

// distinctHashes is identHashes' answer from out, the hashes of every
// identifier of a file, gathered in scratch.
func distinctHashes(out []uint32, limit int, scratch *[]uint32) (hashes []uint32, all bool) {
	if cap(out) <= maxIdentScratch {
		*scratch = out[:0]
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > limit {
		return nil, true
	}
	if len(out) == 0 {
		return nil, false
	}
	return slices.Clone(out), false
}

// mentions reports whether the file's code may name the identifier of
// hash h.
func (fd *fileData) mentions(h uint32) bool {
	if fd.identsAll {
		return true
	}
	_, ok := slices.BinarySearch(fd.idents, h)
	return ok
}

// filesMentioning lists the files that may name any of names, in path
// order. A file already parsed answers from its identifier hashes; one
// not yet parsed is read and its text searched for the names, in
// parallel, and is not parsed: the first query of a cold start does not
// wait for the whole index, and parses only the files that name what it
// looks for (the caller's scan confirms each).
func (ix *Index) filesMentioning(ctx context.Context, names []string) ([]*fileState, error) {
	hs := make([]uint32, len(names))
	for i, n := range names {
		hs[i] = identHash(n)
	}
	parsed := func(fd *fileData) bool { return slices.ContainsFunc(hs, fd.mentions) }
	var keep []bool
	var err error
	if ix.search != nil {
		keep, err = ix.searchFiles(ctx, strings.Join(names, ", "),
			func(ctx context.Context) ([]string, error) { return ix.search.Mentioning(ctx, names) }, parsed)
	} else {
		keep, err = ix.scanFiles(ctx, parsed, func(src []byte) bool { return textNames(src, names) })
	}
	if err != nil {
		return nil, err
	}
	var out []*fileState
	for i, f := range ix.files {
		if keep[i] {
			out = append(out, f)
		}
	}
	return out, nil
}

// maxSearchReadBytes bounds what one query over a partial tree reads of
// the files its text search names (their listed sizes): past it the query
// would read a large part of the package through the link, one file at a
// time, and the complete mirror answers it instead (ErrTextSearch).
const maxSearchReadBytes = 16 << 20

// searchFiles is scanFiles for an index over a partial tree: the files
// not yet parsed are searched where they are (find, one request), and
// those it names are read ahead together.
func (ix *Index) searchFiles(ctx context.Context, what string, find func(context.Context) ([]string, error), parsed func(*fileData) bool) ([]bool, error) {
	keep := make([]bool, len(ix.files))
	var named map[string]bool
	var fetch []string
	var size int64
	for i, f := range ix.files {
		if fd := f.data.Load(); fd != nil {
			keep[i] = parsed(fd)
			continue
		}
		if named == nil {
			paths, err := find(ctx)
			if err != nil {
				return nil, fmt.Errorf("%w: %s for %s: %w", ErrTextSearch, ix.siteDir, what, err)
			}
			named = make(map[string]bool, len(paths))
			for _, p := range paths {
				named[p] = true
			}
		}
		if keep[i] = named[f.rel]; keep[i] {
			fetch = append(fetch, f.rel)
			size += f.size
		}
	}
	if size > ix.maxSearchRead {
		return nil, fmt.Errorf("%w: %s for %s: %d files (%d bytes) to read, over %d", ErrTextSearch, ix.siteDir, what, len(fetch), size, ix.maxSearchRead)
	}
	if len(fetch) > 0 {
		ix.search.Prefetch(ctx, fetch)
	}
	return keep, nil
}

// filesMatching says, for each file of the index, whether it may define a
// symbol q matches: a parsed file may (its bindings are matched after); a
// file not yet parsed is read, in parallel, and may when its text holds a
// word q ranks. Every binding's name is such a word (a word here runs
// over ASCII identifier bytes and any byte past ASCII, so a non-ASCII
// identifier stays whole), so a file left out defines none.
func (ix *Index) filesMatching(ctx context.Context, q SymbolQuery) ([]bool, error) {
	if ix.search != nil {
		if q.lower == "" {
			return nil, fmt.Errorf("%w: %s: a query with no name matches every file", ErrTextSearch, ix.siteDir)
		}
		return ix.searchFiles(ctx, "words like "+q.lower,
			func(ctx context.Context) ([]string, error) { return ix.search.Subsequence(ctx, q.lower) },
			func(*fileData) bool { return true })
	}
	return ix.scanFiles(ctx,
		func(*fileData) bool { return true },
		func(src []byte) bool { return textMatches(src, q) })
}

// scanFiles says, for each file of the index, what parsed says of its data
// when it is parsed, and otherwise what text says of its text, read in
// parallel, each worker into a reused buffer. A file that cannot be read
// is false, as its parse would find nothing in it.
func (ix *Index) scanFiles(ctx context.Context, parsed func(*fileData) bool, text func([]byte) bool) ([]bool, error) {
	keep := make([]bool, len(ix.files))
	p := pool.New().WithContext(ctx).WithMaxGoroutines(min(max(runtime.GOMAXPROCS(0), 1), maxBuildWorkers)).WithCancelOnError()
	for i, f := range ix.files {
		if fd := f.data.Load(); fd != nil {
			keep[i] = parsed(fd)
			continue
		}
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf, release := ix.readBuffer()
			defer release()
			if src, err := ix.sourceInto(f, buf); err == nil {
				keep[i] = text(src)
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, err
	}
	return keep, nil
}

// textMatches reports whether src holds a word q ranks.
func textMatches(src []byte, q SymbolQuery) bool {
	for i := 0; i < len(src); {
		if !isSymbolWordByte(src[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(src) && isSymbolWordByte(src[j]) {
			j++
		}
		// A word shorter than the query's name matches none of its ranks.
		if j-i >= len(q.name) && (src[i] < '0' || src[i] > '9') {
			if _, ok := q.Rank(string(src[i:j])); ok {
				return true
			}
		}
		i = j
	}
	return false
}

// isSymbolWordByte is an ASCII identifier byte or any byte past ASCII.
func isSymbolWordByte(c byte) bool { return isIdentByte(c) || c >= 0x80 }

// readBuffer lends a buffer to read a file into (sourceInto); release
// gives it back once nothing holds its bytes.
func (ix *Index) readBuffer() (buf *bytes.Buffer, release func()) {
	buf, _ = ix.scanBufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	return buf, func() { ix.scanBufs.Put(buf) }
}

// sourceInto reads a file of the index as source does, into buf (reused
// from one file to the next, so that searching the text of a whole
// package keeps one file's bytes per worker, not the package's garbage).
func (ix *Index) sourceInto(f *fileState, buf *bytes.Buffer) ([]byte, error) {
	if ix.read != nil {
		return ix.read(f.rel)
	}
	fh, _, err := localfile.OpenNoFollow(ix.abs(f))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(fh, torchtree.MaxFileBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > torchtree.MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.rel, torchtree.MaxFileBytes)
	}
	return buf.Bytes(), nil
}

// textNames reports whether src holds one of names as a whole word: an
// occurrence whose neighbours are not ASCII identifier characters. It is
// a superset of the identifiers the file's parse finds (a name in a
// string or comment counts too; a neighbour past ASCII is taken as a
// boundary), so a file it leaves out names none of them.
func textNames(src []byte, names []string) bool {
	for _, name := range names {
		for rest, at := src, 0; ; {
			i := bytes.Index(rest, []byte(name))
			if i < 0 {
				break
			}
			start, end := at+i, at+i+len(name)
			if (start == 0 || !isIdentByte(src[start-1])) && (end == len(src) || !isIdentByte(src[end])) {
				return true
			}
			rest, at = src[start+1:], start+1
		}
	}
	return false
}

// isIdentByte is an ASCII letter, digit or underscore.
func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
