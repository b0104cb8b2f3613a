package opimpl

import (
	"context"
	"errors"
	"fmt"

	"github.com/torchlsp/torchlsp/server/internal/gobfile"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// cacheFormat changes whenever the table's meaning or layout does, so an
// old cache is rebuilt rather than misread.
const cacheFormat = 2

type cacheFile struct {
	Format int
	Table  *Table
}

// fingerprint identifies the scanned part of a torch tree: the format,
// torch's version and every candidate file's path, size and modification
// time. A new mirror of another torch has other files; a mirror is
// read-only, so a changed file means a new mirror.
func fingerprint(siteDir string, files []sourceFile) string {
	fp := gobfile.NewFingerprint(fmt.Sprintf("opimpl/%d\n%s", cacheFormat, readVersion(siteDir)))
	for _, f := range files {
		fp.File(f.rel, f.size, f.mtime)
	}
	return fp.Sum()
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
	fp := fingerprint(siteDir, files)
	if t, err := Load(cacheFile); err == nil && t.Fingerprint == fp {
		return t, nil
	}
	t, err := scanFiles(ctx, siteDir, files, budget)
	if err != nil {
		return nil, err
	}
	_ = t.Save(cacheFile)
	return t, nil
}

// Load reads a table saved by Save.
func Load(path string) (*Table, error) {
	var cf cacheFile
	if err := gobfile.Read(path, &cf); err != nil {
		return nil, fmt.Errorf("opimpl: load %s: %w", path, err)
	}
	if cf.Format != cacheFormat || cf.Table == nil {
		return nil, fmt.Errorf("opimpl: load %s: cache format %d, want %d", path, cf.Format, cacheFormat)
	}
	cf.Table.index()
	return cf.Table, nil
}

// Save writes the table to path atomically (a temporary file in the same
// directory, then a rename), so readers never see half a cache.
func (t *Table) Save(path string) error {
	if t == nil {
		return errors.New("opimpl: save nil table")
	}
	if err := gobfile.Write(path, cacheFile{Format: cacheFormat, Table: t}); err != nil {
		return fmt.Errorf("opimpl: save %s: %w", path, err)
	}
	return nil
}
