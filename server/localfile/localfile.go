// Package localfile reads local files that torchlsp did not write (a
// workspace's sources and configuration, a file an editor saved, a file a
// run on a target names) without trusting what they are. A file is opened
// without blocking, so a named pipe or a terminal never stalls the
// caller; it is checked on the open descriptor to be a regular file, so a
// swap between a directory walk and the read changes nothing; and it is
// read through a limit one byte past the bound, so a file that grows
// while it is read is refused rather than held in memory.
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

var (
	// ErrNotRegular marks a path that is not a plain file: a device, a
	// named pipe, a socket, a directory, or a symbolic link where links
	// are refused.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge marks a file over the caller's limit, or one that grew
	// past it while it was read.
	ErrTooLarge = errors.New("over the size limit")
	// ErrLink marks a symbolic link that ReadNoFollow refused; it is an
	// ErrNotRegular.
	ErrLink = fmt.Errorf("a symbolic link, %w", ErrNotRegular)
)

// openFlags open a file for reading without waiting for a writer (a
// FIFO), without becoming the controlling terminal, and not inherited.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// Read reads path, following symbolic links, when what it names is a
// regular file of at most limit bytes.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, path, limit)
}

// ReadNoFollow reads path like Read, but refuses a symbolic link at path
// itself: for files whose author is not the user (a repository's
// torchlsp.toml), where a link could name /dev/zero, the server's stdin or
// a file outside the repository.
func ReadNoFollow(path string, limit int64) ([]byte, error) {
	f, _, err := OpenNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, path, limit)
}

// OpenNoFollow opens path for reading as ReadNoFollow does (no link at
// path itself, never blocking) and checks on the open descriptor that it
// is a regular file, whose facts (its owner, its size) it returns: what
// the caller then reads from f (ReadOpen) is the file it checked.
func OpenNoFollow(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, openFlags|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s is %w", path, ErrLink)
	}
	if err != nil {
		return nil, nil, err
	}
	return checkOpen(f, path)
}

// ReadIn reads name inside root like Read: the root refuses any path or
// symbolic link that leads outside it, for a workspace's files.
func ReadIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, name, limit)
}

// OpenIn opens name inside root for reading (the root refuses any path
// or link that leads outside it; a named pipe never blocks) and checks on
// the open descriptor that it is a regular file. Proving a file and
// reading it is then one act: the caller reads f (ReadOpen), never the
// name again, so a swap of the name for a link after the check changes
// nothing.
func OpenIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	return checkOpen(f, name)
}

// checkOpen keeps f when it is a regular file, else closes it.
func checkOpen(f *os.File, name string) (*os.File, fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, %w", name, Kind(st.Mode()), ErrNotRegular)
	}
	return f, st, nil
}

// Owner is the user id that owns the file st describes; ok is false where
// the system does not say.
func Owner(st fs.FileInfo) (uid int, ok bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(sys.Uid), true
}

// OwnedByMe reports whether the current user owns the file st describes.
func OwnedByMe(st fs.FileInfo) bool {
	uid, ok := Owner(st)
	return ok && uid == os.Geteuid()
}

// ReadOpen checks an open file and reads it: it must be a regular file of
// at most limit bytes, and not grow past limit while it is read. name is
// what errors call it.
func ReadOpen(f *os.File, name string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, %w", name, Kind(st.Mode()), ErrNotRegular)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit: %w", name, st.Size(), limit, ErrTooLarge)
	}
	// The size may grow after the stat: one byte more than allowed tells.
	data, err := readSized(io.LimitReader(f, limit+1), st.Size())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the %d-byte limit while it was read: %w", name, limit, ErrTooLarge)
	}
	return data, nil
}

// readSized reads r to its end into a buffer of size+1 bytes, grown only
// if r holds more: as os.ReadFile does, where io.ReadAll would start small
// and double, allocating about twice the file (an index build reads every
// file of torch once: 91 MB of garbage for its 46 MB before).
func readSized(r io.Reader, size int64) ([]byte, error) {
	data := make([]byte, 0, size+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // the file grew: let append pick the size
		}
	}
}

// Kind names what a file mode describes, for messages: "a named pipe",
// "a character device", ….
func Kind(m fs.FileMode) string {
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
