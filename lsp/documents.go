package lsp

import (
	"container/list"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/uri"
)

// document is one version of an open document. It is immutable: a change
// makes a new one, so a request keeps converting positions against the
// version it arrived after while later changes are applied.
type document struct {
	uri     string
	version int32
	mapper  *Mapper
}

// documents holds the open documents' texts, which lsp keeps for itself
// to apply incremental edits and convert positions.
type documents struct {
	mu     sync.RWMutex
	byURI  map[string]*document
	byPath map[string]*document // file: URIs only, by local path
}

func newDocuments() *documents {
	return &documents{byURI: make(map[string]*document), byPath: make(map[string]*document)}
}

func (d *documents) open(u string, version int32, text string) *document {
	doc := &document{uri: u, version: version, mapper: NewMapper(text)}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byURI[u] = doc
	if path, ok := filePath(u); ok {
		d.byPath[path] = doc
	}
	return doc
}

// change applies changes to the open document u and stores the result.
func (d *documents) change(u string, version int32, changes []ContentChange) (*document, error) {
	d.mu.RLock()
	old := d.byURI[u]
	d.mu.RUnlock()
	if old == nil {
		return nil, fmt.Errorf("document %s is not open", u)
	}
	text, err := ApplyChanges(old.mapper.Text(), changes)
	if err != nil {
		return nil, fmt.Errorf("document %s version %d: %w", u, version, err)
	}
	// Only the read loop changes documents, so nothing replaced old since
	// it was read above.
	return d.open(u, version, text), nil
}

func (d *documents) close(u string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byURI, u)
	if path, ok := filePath(u); ok {
		delete(d.byPath, path)
	}
}

func (d *documents) get(u string) *document {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.byURI[u]
}

func (d *documents) getPath(path string) *document {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.byPath[path]
}

// filePath returns the local path of a file: URI. It never panics, unlike
// uri.URI.Filename in older go.lsp.dev/uri releases, and insists on an
// explicit file scheme: uri.Parse reads a URI without a scheme (even "")
// as a file.
func filePath(u string) (string, bool) {
	if len(u) < len("file:") || !strings.EqualFold(u[:len("file:")], "file:") {
		return "", false
	}
	parsed, err := uri.Parse(u)
	if err != nil || !parsed.IsFile() {
		return "", false
	}
	return parsed.FsPath(), true
}

// fileMappers caches Mappers for files on disk, such as the mirrored torch
// sources that definitions point into. Entries are checked against the
// file's size and modification time, and the least recently used are
// dropped beyond the limit.
type fileMappers struct {
	limit int
	mu    sync.Mutex
	lru   *list.List // of *fileMapper, most recent first
	index map[string]*list.Element
}

type fileMapper struct {
	path    string
	size    int64
	modTime time.Time
	mapper  *Mapper
}

func newFileMappers(limit int) *fileMappers {
	return &fileMappers{limit: limit, lru: list.New(), index: make(map[string]*list.Element)}
}

// get returns a Mapper for the file's current content.
func (c *fileMappers) get(path string) (*Mapper, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	c.mu.Lock()
	if el, ok := c.index[path]; ok {
		fm := el.Value.(*fileMapper)
		if fm.size == info.Size() && fm.modTime.Equal(info.ModTime()) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return fm.mapper, nil
		}
	}
	c.mu.Unlock()

	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	fm := &fileMapper{path: path, size: info.Size(), modTime: info.ModTime(), mapper: NewMapper(string(data))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[path]; ok {
		c.lru.Remove(el)
	}
	c.index[path] = c.lru.PushFront(fm)
	for c.lru.Len() > c.limit {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.index, last.Value.(*fileMapper).path)
	}
	return fm.mapper, nil
}
