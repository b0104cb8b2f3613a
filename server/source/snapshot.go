package source

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// DefaultMaxBytes bounds the text of one document. A larger document is
// kept (its edits still apply) but not analysed: parsing and analysing
// tens of megabytes costs gigabytes, and no hand-written Python is that
// large.
const DefaultMaxBytes = 4 << 20

// ErrTooLarge marks a document over the store's size limit.
var ErrTooLarge = errors.New("document too large to analyse")

// ParseFunc parses a Python text into a buffer; the store's owner supplies
// it (a pool of parsers, say). It gives up with ctx's error when ctx is
// done, and returns no buffer then.
type ParseFunc func(ctx context.Context, src []byte) (*pybuf.Buffer, error)

// ParseWith adapts a parse that cannot be stopped (pybuf.Parse, a test's
// counting parse) to a ParseFunc.
func ParseWith(parse func(src []byte) *pybuf.Buffer) ParseFunc {
	return func(ctx context.Context, src []byte) (*pybuf.Buffer, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return parse(src), nil
	}
}

// Snapshot is one version of one open document. It never changes: an edit
// makes a new Snapshot. Its analyses are computed on first use, once.
// It is safe for concurrent use.
type Snapshot struct {
	uri      string
	path     string // local path of a file: URI; "" for other schemes
	version  int32
	language string // the client's languageId; "" when none was given
	mapper   *Mapper
	tooLarge bool
	parse    ParseFunc

	// parseMu serialises the parse of this version; a parse that was
	// stopped leaves buf nil, and the next caller parses again.
	parseMu sync.Mutex
	buf     *pybuf.Buffer // guarded by parseMu until set, then read-only

	memoMu sync.Mutex // guards memo
	memo   map[any]*memoEntry
}

type memoEntry struct {
	once  sync.Once
	value any
}

// URI is the document's URI as the client sent it.
func (s *Snapshot) URI() string { return s.uri }

// Path is the local file the URI names, or "" for non-file URIs.
func (s *Snapshot) Path() string { return s.path }

// Version is the client's version of this text.
func (s *Snapshot) Version() int32 { return s.version }

// Text is the document's text at this version.
func (s *Snapshot) Text() string { return s.mapper.Text() }

// Mapper converts positions in this version's text.
func (s *Snapshot) Mapper() *Mapper { return s.mapper }

// TooLarge reports whether the text is over the store's size limit; such a
// document's Buffer is empty.
func (s *Snapshot) TooLarge() bool { return s.tooLarge }

// Language is the languageId the client gave the document ("" when none).
func (s *Snapshot) Language() string { return s.language }

// IsPython reports whether the document is Python source, the only kind
// that is ever parsed: what the client calls "python", or, where the
// client names no language (the command line) or names another for a
// Python file, a .py, .pyi or .pyw file, a file with no extension (a
// script) or a buffer that is no file. A log, a report or any other text
// the editor opens (VS Code opens tracebacks' logs for their links) is
// never parsed as Python: its Buffer is empty.
func (s *Snapshot) IsPython() bool { return isPython(s.language, s.path) }

func isPython(language, path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".py", ".pyi", ".pyw":
		return true
	case "":
		return language == "" || strings.EqualFold(language, "python")
	}
	return strings.EqualFold(language, "python")
}

// Buffer is the parsed buffer of this version, parsed on first use; it is
// empty for a document that is not Python or is too large.
func (s *Snapshot) Buffer() *pybuf.Buffer {
	b, err := s.BufferContext(context.Background())
	if err != nil {
		// Only a done context stops a parse, and this one never is.
		panic(fmt.Sprintf("source: uncancellable parse of %s stopped: %v", s.uri, err))
	}
	return b
}

// BufferContext is Buffer that gives up when ctx is done, as when a newer
// version makes this one's analysis moot; a stopped parse is not kept, so
// a later caller parses again. Callers of one snapshot parse one at a
// time: the second waits for the first's parse.
func (s *Snapshot) BufferContext(ctx context.Context) (*pybuf.Buffer, error) {
	s.parseMu.Lock()
	defer s.parseMu.Unlock()
	if s.buf != nil {
		return s.buf, nil
	}
	var src []byte
	if !s.tooLarge && s.IsPython() {
		src = []byte(s.mapper.Text())
	}
	b, err := s.parse(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("parse %s version %d: %w", s.uri, s.version, err)
	}
	s.buf = b
	return b, nil
}

// Memo returns the value compute makes for key, computing it at most once
// for this snapshot (concurrent callers wait for the first). Keys are
// compared with ==; analyses that depend on something besides the text
// (the target's flag catalog) put it in the key.
func (s *Snapshot) Memo(key any, compute func() any) any {
	s.memoMu.Lock()
	if s.memo == nil {
		s.memo = map[any]*memoEntry{}
	}
	e, ok := s.memo[key]
	if !ok {
		e = &memoEntry{}
		s.memo[key] = e
	}
	s.memoMu.Unlock()
	e.once.Do(func() { e.value = compute() })
	return e.value
}

type flagRefsKey struct{ cat *gates.Catalog }

// FlagRefs are the config-flag references of this version for a target's
// flag catalog, found once per catalog.
func (s *Snapshot) FlagRefs(cat *gates.Catalog) []diagnose.FlagRef {
	return s.Memo(flagRefsKey{cat}, func() any {
		buf := s.Buffer()
		if s.tooLarge {
			return []diagnose.FlagRef(nil)
		}
		return diagnose.FlagRefs(buf, cat)
	}).([]diagnose.FlagRef)
}

// Store holds the latest snapshot of every open document. Only the
// connection's read loop (or the command line) changes it; requests take a
// snapshot and keep it.
type Store struct {
	maxBytes int
	parse    ParseFunc

	mu     sync.RWMutex // guards byURI and byPath
	byURI  map[string]*Snapshot
	byPath map[string]*Snapshot // file: URIs only, by local path
}

// NewStore makes an empty store. maxBytes <= 0 means DefaultMaxBytes; parse
// nil means pybuf.Parse, which cannot be stopped.
func NewStore(maxBytes int, parse ParseFunc) *Store {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if parse == nil {
		parse = ParseWith(pybuf.Parse)
	}
	return &Store{maxBytes: maxBytes, parse: parse, byURI: map[string]*Snapshot{}, byPath: map[string]*Snapshot{}}
}

// Open records a document's text, replacing any earlier version. language
// is the client's languageId ("" when it gave none: the document's path
// decides whether it is Python). A text over the limit is kept but marked
// TooLarge, and the error says so.
func (st *Store) Open(uri, language string, version int32, text string) (*Snapshot, error) {
	path, _ := FilePath(uri)
	snap := &Snapshot{uri: uri, path: path, version: version, language: language, mapper: NewMapper(text), parse: st.parse, tooLarge: len(text) > st.maxBytes}
	st.mu.Lock()
	st.byURI[uri] = snap
	if path != "" {
		st.byPath[path] = snap
	}
	st.mu.Unlock()
	if snap.tooLarge {
		return snap, fmt.Errorf("%s: %w: %d bytes, the limit is %d", uri, ErrTooLarge, len(text), st.maxBytes)
	}
	return snap, nil
}

// Change applies edits to the open document uri and records the result as
// version. An error leaves the store as it was.
func (st *Store) Change(uri string, version int32, changes []Change) (*Snapshot, error) {
	old := st.Get(uri)
	if old == nil {
		return nil, fmt.Errorf("document %s is not open", uri)
	}
	text, err := ApplyChanges(old.Text(), changes)
	if err != nil {
		return nil, fmt.Errorf("document %s version %d: %w", uri, version, err)
	}
	return st.Open(uri, old.language, version, text)
}

// Close forgets a document and returns its last snapshot (nil if it was
// not open).
func (st *Store) Close(uri string) *Snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	snap := st.byURI[uri]
	delete(st.byURI, uri)
	if snap != nil && snap.path != "" && st.byPath[snap.path] == snap {
		delete(st.byPath, snap.path)
	}
	return snap
}

// Get returns the latest snapshot of an open document, or nil.
func (st *Store) Get(uri string) *Snapshot {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.byURI[uri]
}

// ByPath returns the latest snapshot of the open document for a local
// file, or nil.
func (st *Store) ByPath(path string) *Snapshot {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.byPath[path]
}

// All returns the latest snapshot of every open document, by URI.
func (st *Store) All() []*Snapshot {
	st.mu.RLock()
	out := make([]*Snapshot, 0, len(st.byURI))
	for _, s := range st.byURI {
		out = append(out, s)
	}
	st.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].uri < out[j].uri })
	return out
}

// IsCurrent reports whether snap is still the latest version of its
// document.
func (st *Store) IsCurrent(snap *Snapshot) bool {
	return snap != nil && st.Get(snap.uri) == snap
}
