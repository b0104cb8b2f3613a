// Package gobfile reads and writes the engine's gob-encoded caches (the
// flag catalog, the compiled-op table) beside a mirror. A write is atomic
// (a temporary file in the same directory, then a rename), so a reader
// never sees half a cache.
package gobfile

import (
	"encoding/gob"
	"os"
	"path/filepath"
)

// Read decodes the file at path into v.
func Read(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return gob.NewDecoder(f).Decode(v)
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
