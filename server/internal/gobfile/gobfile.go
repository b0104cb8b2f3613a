// Package gobfile reads and writes the engine's gob-encoded caches (the
// flag catalog, the compiled-op table) beside a mirror. A write is atomic
// (a temporary file in the same directory, then a rename), so a reader
// never sees half a cache. A read treats the file as hostile, as the
// rest of the cache is read: see Read.
package gobfile

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// MaxBytes bounds a cache file that Read accepts. The caches are small:
// the compiled-op table of Debian's torch 1.13 is 76 KB, its flag catalog
// under 1 KB, and torch 2.11's are of the same order; 64 MiB is hundreds
// of times that, and far below what would hurt the editor's machine. A
// larger file is not a cache torchlsp wrote: it is refused, so rebuilt.
const MaxBytes = 64 << 20

// Read decodes the file at path into v. The file is read as the cache is
// (whatever torchlsp wrote there may have been replaced): opened without
// following a link at its name and without blocking, checked on the open
// descriptor to be a regular file, and read through MaxBytes, so a named
// pipe, a link to /dev/zero or a huge file fails at once; a Cache treats
// that failure as a missing file and rebuilds.
func Read(path string, v any) error {
	data, err := localfile.ReadNoFollow(path, MaxBytes)
	if err != nil {
		return err
	}
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

// Write encodes v into the file at path, atomically.
func Write(path string, v any) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := gob.NewEncoder(tmp).Encode(v); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Cache is a value built from a tree and kept in a file beside it, with
// the fingerprint of what it was built from: it is used again only while
// the tree has that fingerprint.
type Cache[T any] struct {
	Kind string // names the cache in errors: "gates", "opimpl"
	// Format changes whenever T's meaning or layout does, so that an old
	// file is rebuilt rather than misread.
	Format int
	// Fingerprint is the fingerprint a value was built from.
	Fingerprint func(*T) string
	// Loaded prepares a value read from a file (its lookup maps); nil
	// when it needs nothing.
	Loaded func(*T)
}

// cacheFile is what a Cache's file holds.
type cacheFile[T any] struct {
	Format int
	Value  *T
}

// Open returns the value in the file at path when it was built from files
// with fingerprint fp; otherwise it builds the value and writes it back. A
// missing, corrupt or stale file is rebuilt; failing to write it is not
// the caller's problem, since the value itself is good.
func (c Cache[T]) Open(path, fp string, build func() (*T, error)) (*T, error) {
	if v, err := c.Load(path); err == nil && c.Fingerprint(v) == fp {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	_ = c.Save(path, v)
	return v, nil
}

// Load reads a value saved by Save.
func (c Cache[T]) Load(path string) (*T, error) {
	var cf cacheFile[T]
	if err := Read(path, &cf); err != nil {
		return nil, fmt.Errorf("%s: load %s: %w", c.Kind, path, err)
	}
	if cf.Format != c.Format || cf.Value == nil {
		return nil, fmt.Errorf("%s: load %s: cache format %d, want %d", c.Kind, path, cf.Format, c.Format)
	}
	if c.Loaded != nil {
		c.Loaded(cf.Value)
	}
	return cf.Value, nil
}

// Save writes v to path, atomically.
func (c Cache[T]) Save(path string, v *T) error {
	if v == nil {
		return errors.New(c.Kind + ": save nil")
	}
	if err := Write(path, cacheFile[T]{Format: c.Format, Value: v}); err != nil {
		return fmt.Errorf("%s: save %s: %w", c.Kind, path, err)
	}
	return nil
}
