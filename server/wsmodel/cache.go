package wsmodel

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/torchlsp/torchlsp/server/internal/gobfile"
)

// cacheVersion changes when File's shape or meaning does: a cache of
// another version is not read.
const cacheVersion = 10

// diskCache is what a model's cache file holds: each file's facts with
// the size and modification time they were read at, under the key of
// what they were read against (the roots, the import paths, the target's
// torch).
type diskCache struct {
	Version int
	Key     string
	Files   map[string]diskEntry
}

type diskEntry struct {
	Size    int64
	ModTime int64
	File    *File
}

// loadCache reads the cache at path when it is of this version and key;
// a missing, forged or stale cache is an empty one (the build reads the
// files again). Its entries are only ever looked up by the paths the
// build walks.
func loadCache(path, key string) map[string]diskEntry {
	if path == "" {
		return nil
	}
	var c diskCache
	if err := gobfile.Read(path, &c); err != nil || c.Version != cacheVersion || c.Key != key+binaryIdentity() {
		return nil
	}
	return c.Files
}

// saveCache writes the cache; a failure leaves the next build cold.
func saveCache(path, key string, files map[string]diskEntry) error {
	if path == "" {
		return nil
	}
	return gobfile.Write(path, diskCache{Version: cacheVersion, Key: key + binaryIdentity(), Files: files})
}

// binaryIdentity names the program that read the facts (its size and
// time): a new build of torchlsp may read files otherwise, so its first
// build of a workspace reads them again, whether or not cacheVersion was
// changed with it.
func binaryIdentity() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("\x00%d %d", st.Size(), st.ModTime().UnixNano())
}

// fresh says whether a cached entry was read from the file as it is now.
func (e diskEntry) fresh(info fs.FileInfo) bool {
	return e.File != nil && e.Size == info.Size() && e.ModTime == info.ModTime().UnixNano()
}
