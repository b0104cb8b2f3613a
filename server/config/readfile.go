package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxConfigBytes bounds a config file (torchlsp.toml, config.toml): real
// ones are a few hundred bytes, so anything larger is refused unread
// rather than held in memory.
const MaxConfigBytes = 1 << 20

// maxRecordsBytes bounds the trust records, which hold one line per
// trusted workspace.
const maxRecordsBytes = 16 << 20

// errNotRegular marks a config path that is not a plain file: a symbolic
// link where links are refused, a device, a pipe, a socket or a directory.
var errNotRegular = errors.New("not a regular file")

// readRegular reads path, which must be a regular file of at most limit
// bytes. follow says whether a symbolic link at path itself is followed:
// the user's own config.toml may be a dotfile manager's link, but a
// workspace's torchlsp.toml comes from whoever wrote the repository, and a
// link there could point at /dev/zero, /dev/stdin or a file outside it.
// The file is opened without blocking (a FIFO or a terminal never stalls
// the caller) and checked on the open descriptor, so a swap between the
// check and the read changes nothing.
func readRegular(path string, limit int64, follow bool) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC
	if !follow {
		flags |= syscall.O_NOFOLLOW
		if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link: %w; torchlsp reads it only as a regular file in the workspace, so replace the link with a copy of the file", path, errNotRegular)
		}
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: %w; torchlsp reads it only as a regular file in the workspace, so replace the link with a copy of the file", path, errNotRegular)
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
		return nil, fmt.Errorf("%s is %s: %w, so it is not read", path, kindOf(st.Mode()), errNotRegular)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for this file: it is not read", path, st.Size(), limit)
	}
	// The size may grow after the stat: read one byte more than allowed to
	// notice.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the %d-byte limit for this file while it was read: it is not used", path, limit)
	}
	return data, nil
}

// kindOf names a file mode for messages.
func kindOf(m fs.FileMode) string {
	switch {
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
