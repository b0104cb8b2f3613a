package lsp

import (
	"container/list"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/server/localfile"
	"github.com/torchlsp/torchlsp/server/source"
)

// maxMappedFileBytes bounds a file read to map a location in it: torch's
// largest source file is 1.4 MB, and a mirror keeps none over 4 MiB.
const maxMappedFileBytes = 8 << 20

// fileMappers caches Mappers for files on disk, such as the mirrored torch
// sources that definitions point into. Entries are checked against the
// file's size and modification time, and the least recently used are
// dropped beyond the limit. A file is read as any local file torchlsp did
// not write (server/localfile): a path that names a named pipe or a device
// is refused, never read without end.
type fileMappers struct {
	limit int
	mu    sync.Mutex // guards lru and index
	lru   *list.List // of *fileMapper, most recent first
	index map[string]*list.Element
}

type fileMapper struct {
	path    string
	size    int64
	modTime time.Time
	mapper  *source.Mapper
}

func newFileMappers(limit int) *fileMappers {
	return &fileMappers{limit: limit, lru: list.New(), index: make(map[string]*list.Element)}
}

// get returns a Mapper for the file's current content.
func (c *fileMappers) get(path string) (*source.Mapper, error) {
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

	data, err := localfile.Read(path, maxMappedFileBytes)
	if err != nil {
		return nil, fmt.Errorf("mapping a location's file: %w", err)
	}
	fm := &fileMapper{path: path, size: info.Size(), modTime: info.ModTime(), mapper: source.NewMapper(string(data))}
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
