// Package gobfile reads and writes the engine's gob-encoded caches (the
// flag catalog, the compiled-op table) beside a mirror. A write is atomic
// (a temporary file in the same directory, then a rename), so a reader
// never sees half a cache.
package gobfile

import (
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"hash"
	"os"
	"path/filepath"
	"strconv"
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

// Fingerprint identifies the files a cache was built from: a header (the
// cache's kind and format, the package's version) and each file's path,
// size and modification time. Mirrors are read-only, so a changed file
// means a new mirror and a new fingerprint.
type Fingerprint struct{ h hash.Hash }

// NewFingerprint starts a fingerprint with its header.
func NewFingerprint(header string) *Fingerprint {
	f := &Fingerprint{h: sha256.New()}
	f.h.Write([]byte(header + "\n"))
	return f
}

// File adds one file.
func (f *Fingerprint) File(rel string, size, mtime int64) {
	f.h.Write([]byte(rel))
	f.h.Write([]byte{0})
	f.h.Write([]byte(strconv.FormatInt(size, 10)))
	f.h.Write([]byte{0})
	f.h.Write([]byte(strconv.FormatInt(mtime, 10)))
	f.h.Write([]byte{'\n'})
}

// Sum is the fingerprint as hex.
func (f *Fingerprint) Sum() string { return hex.EncodeToString(f.h.Sum(nil)) }
