package pyindex

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// TextSearch searches the text of a partial tree's files where they are
// (the target), so that a cross-reference query reads the few files that
// name what it looks for, not the whole package.
type TextSearch interface {
	// Mentioning lists the files (slash-separated, relative to the site
	// dir) whose text holds one of words as a whole word, by textNames'
	// rule: a superset of the files whose code names them.
	Mentioning(ctx context.Context, words []string) ([]string, error)
	// Subsequence lists the files whose text holds a word with lower's
	// bytes in order, ASCII case folded (textMatches' rule: every name a
	// SymbolQuery of that lower-case name ranks is such a word).
	Subsequence(ctx context.Context, lower string) ([]string, error)
	// Prefetch reads files ahead in as few round trips as it can, so that
	// the reads that follow find them; a file it misses is read as usual.
	Prefetch(ctx context.Context, rels []string)
}

// ListedFile is one file of a tree known by its listing, not by a walk.
type ListedFile struct {
	Path string // slash-separated, relative to the site dir
	Size int64
}

// OpenListing opens an index over a tree whose files are listed but not
// all present: read supplies a file's contents the first time Resolve
// needs them (and may write them under siteDir, where symbols' paths and
// docstrings point). A failed read is not remembered. The index has no
// cache file; Build would read every file, so callers of an on-demand
// tree do not call it.
//
// search, when not nil, is where a cross-reference query learns which of
// the files not yet read name what it looks for (TextSearch), instead of
// reading every file.
func OpenListing(siteDir string, files []ListedFile, read func(rel string) ([]byte, error), search TextSearch) (*Index, error) {
	abs, err := filepath.Abs(siteDir)
	if err != nil {
		return nil, fmt.Errorf("pyindex: open listing %s: %w", siteDir, err)
	}
	ix := &Index{
		siteDir:  abs,
		modules:  map[string]*module{},
		children: map[string][]string{},
		parsers:  syntax.NewPool(1),
		read:     read,
		search:   search,

		maxSearchRead: maxSearchReadBytes,

		maxFileNames: MaxNamesPerFile,
		maxNames:     MaxNamesPerIndex,
	}
	for _, f := range files {
		rel := f.Path
		dir, name := "", rel
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			dir, name = rel[:i], rel[i+1:]
		}
		if dir != "" && !allIdentifiers(dir) {
			continue
		}
		stub := strings.HasSuffix(name, ".pyi")
		if !stub && !strings.HasSuffix(name, ".py") {
			continue
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(name, ".pyi"), ".py")
		if !syntax.IsIdentifier(stem) {
			continue
		}
		ix.addFile(rel, stem, stub, listedInfo{name: name, size: f.Size})
	}
	sort.Slice(ix.files, func(i, j int) bool { return ix.files[i].rel < ix.files[j].rel })
	for parent := range ix.children {
		sort.Strings(ix.children[parent])
	}
	ix.fingerprint = ix.treeFingerprint()
	return ix, nil
}

func allIdentifiers(dir string) bool {
	for _, part := range strings.Split(dir, "/") {
		if !syntax.IsIdentifier(part) {
			return false
		}
	}
	return true
}

// listedInfo is the fs.FileInfo of a listed file.
type listedInfo struct {
	name string
	size int64
}

func (i listedInfo) Name() string       { return i.name }
func (i listedInfo) Size() int64        { return i.size }
func (i listedInfo) Mode() fs.FileMode  { return 0o444 }
func (i listedInfo) ModTime() time.Time { return time.Time{} }
func (i listedInfo) IsDir() bool        { return false }
func (i listedInfo) Sys() any           { return nil }
