package opimpl

import (
	"context"
	"fmt"

	"github.com/torchlsp/torchlsp/server/internal/gobfile"
	"github.com/torchlsp/torchlsp/server/internal/torchtree"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// cacheFormat changes whenever the table's meaning or layout does, so an
// old cache is rebuilt rather than misread.
const cacheFormat = 2

// tableCache keeps a table beside its mirror.
func tableCache() gobfile.Cache[Table] {
	return gobfile.Cache[Table]{
		Kind: "opimpl", Format: cacheFormat,
		Fingerprint: func(t *Table) string { return t.Fingerprint },
		Loaded:      (*Table).index,
	}
}

// fingerprint identifies the scanned part of a torch tree: the format,
// torch's version and every candidate file's path, size and modification
// time. A new mirror of another torch has other files; a mirror is
// read-only, so a changed file means a new mirror.
func fingerprint(siteDir string, files []torchtree.File) string {
	return torchtree.Fingerprint(fmt.Sprintf("opimpl/%d", cacheFormat), siteDir, files)
}

// Open returns the table of the torch tree under siteDir, read from
// cacheFile when that was built from the same files, else scanned and
// written back. A missing, corrupt or stale cache is rebuilt; failing to
// write it is not the caller's problem, since the table itself is good.
//
// budget, shared with the process's other background parsing, bounds the
// text parsed at once; nil gives the scan a budget of its own.
func Open(ctx context.Context, siteDir, cacheFile string, budget *syntax.Budget) (*Table, error) {
	files, err := listFiles(siteDir)
	if err != nil {
		return nil, err
	}
	return tableCache().Open(cacheFile, fingerprint(siteDir, files), func() (*Table, error) {
		return scanFiles(ctx, siteDir, files, budget)
	})
}

// Load reads a table saved by Save.
func Load(path string) (*Table, error) { return tableCache().Load(path) }

// Save writes the table to path atomically (a temporary file in the same
// directory, then a rename), so readers never see half a cache.
func (t *Table) Save(path string) error { return tableCache().Save(path, t) }
