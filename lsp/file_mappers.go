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
// dropped beyond either limit: entries, or bytes held (each file's text
// and its line table; the newest entry stays even alone over it). A
// references or workspace-symbol answer names dozens of torch files: held
// without the byte bound, their text was 5 MB of the cold server's peak.
// A file is read as any local file torchlsp did not write
// (server/localfile): a path that names a named pipe or a device is
// refused, never read without end.
type fileMappers struct {
	limit      int        // entries
	limitBytes int64      // bytes held, see mapperBytes
	mu         sync.Mutex // guards lru, index and bytes
	lru        *list.List // of *fileMapper, most recent first
	index      map[string]*list.Element
	bytes      int64 // mapperBytes of every entry
}

// fileMapperBytes is the byte bound of the server's file mappers: torch's
// largest file (1.4 MB) fits beside the files of a typical answer.
const fileMapperBytes = 2 << 20

type fileMapper struct {
	path    string
	size    int64
	modTime time.Time
	mapper  *source.Mapper
	bytes   int64
}

// mapperBytes is what a Mapper of text holds: the text and 4 bytes a line.
func mapperBytes(m *source.Mapper) int64 {
	return int64(len(m.Text())) + 4*int64(m.LineCount())
}

func newFileMappers(limit int, limitBytes int64) *fileMappers {
	return &fileMappers{limit: limit, limitBytes: limitBytes, lru: list.New(), index: make(map[string]*list.Element)}
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
	m := source.NewMapper(string(data))
	fm := &fileMapper{path: path, size: info.Size(), modTime: info.ModTime(), mapper: m, bytes: mapperBytes(m)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[path]; ok {
		c.drop(el)
	}
	c.index[path] = c.lru.PushFront(fm)
	c.bytes += fm.bytes
	for c.lru.Len() > 1 && (c.lru.Len() > c.limit || c.bytes > c.limitBytes) {
		c.drop(c.lru.Back())
	}
	return fm.mapper, nil
}

// drop forgets an entry. c.mu is held.
func (c *fileMappers) drop(el *list.Element) {
	fm := el.Value.(*fileMapper)
	c.lru.Remove(el)
	delete(c.index, fm.path)
	c.bytes -= fm.bytes
}
