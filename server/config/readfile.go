package config

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// MaxConfigBytes bounds a config file (torchlsp.toml, config.toml): real
// ones are a few hundred bytes, so anything larger is refused unread
// rather than held in memory.
const MaxConfigBytes = 1 << 20

// maxRecordsBytes bounds the trust records, which hold one line per
// trusted workspace.
const maxRecordsBytes = 16 << 20

// readRegular reads path, which must be a regular file of at most limit
// bytes (localfile: opened without blocking, checked on the descriptor,
// read through the limit). follow says whether a symbolic link at path
// itself is followed: the user's own config.toml may be a dotfile
// manager's link, but a workspace's torchlsp.toml comes from whoever wrote
// the repository, and a link there could point at /dev/zero, /dev/stdin or
// a file outside it.
func readRegular(path string, limit int64, follow bool) ([]byte, error) {
	if follow {
		return localfile.Read(path, limit)
	}
	data, err := localfile.ReadNoFollow(path, limit)
	if errors.Is(err, localfile.ErrLink) {
		return nil, fmt.Errorf("%w; torchlsp reads it only as a regular file in the workspace, so replace the link with a copy of the file", err)
	}
	return data, err
}

// kindOf names a file mode for messages.
func kindOf(m fs.FileMode) string { return localfile.Kind(m) }
