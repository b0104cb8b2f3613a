package pyindex

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/server/syntax"
)

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
func OpenListing(siteDir string, files []ListedFile, read func(rel string) ([]byte, error)) (*Index, error) {
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
