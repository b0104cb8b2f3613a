package remote

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// The cache is read as hostile: whatever torchlsp wrote there, another
// process of the user's, a forged archive unpacked over it, or a damaged
// disk may have replaced. So every file of the cache that torchlsp reads
// back (a mirror's manifest, a file of a mirror or an on-demand tree) is
// opened without following a link at its name and without blocking (a
// FIFO never stalls the caller, and a link to /dev/zero or to the
// server's stdin is not opened), checked on the open descriptor to be a
// regular file, and read through a bound one byte past its limit. Every
// directory of the cache that is listed is opened as a directory first,
// so a FIFO or a device where one was expected fails at once. Any limit
// a cache file states (a manifest's max_file_bytes) can only narrow the
// binary's own.

// maxManifestBytes bounds a mirror's manifest. finishTree writes none
// larger: it moves skipped files past the bound into SkippedMore.
const maxManifestBytes = 4 << 20

// cacheOpenFlags open a cache file for reading: no link followed at its
// name, no wait for a FIFO's writer, never the controlling terminal, not
// inherited.
const cacheOpenFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// errCacheNotRegular marks a cache path that is not a plain file.
var errCacheNotRegular = errors.New("not a regular file")

// readCacheFile reads the regular file p of the cache, of at most limit
// bytes, as the cache's files are read (see above).
func readCacheFile(p string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(p, cacheOpenFlags, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, %w", p, errCacheNotRegular)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, %w", p, fileKind(st.Mode()), errCacheNotRegular)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %s, over the limit of %s", p, byteSize(st.Size()), byteSize(limit))
	}
	// The size may grow after the stat: one byte more than allowed tells.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the limit of %s while it was read", p, byteSize(limit))
	}
	return data, nil
}

// readCacheDir lists the directory dir of the cache. It is opened as a
// directory without blocking, so that a FIFO, a device or a file there
// fails at once instead of hanging the caller; a link to a directory is
// followed, as os.ReadDir follows it.
func readCacheDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// fileKind names what a file mode describes, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}
