package gates

import (
	"context"
	"errors"
	"fmt"

	"github.com/torchlsp/torchlsp/server/internal/gobfile"
)

// cacheFormat changes whenever the catalog's meaning or layout does, so an
// old cache is rebuilt rather than misread.
const cacheFormat = 1

type cacheFile struct {
	Format  int
	Catalog *Catalog
}

// fingerprint identifies a torch tree: torch's version and every .py
// file's path, size and modification time.
func fingerprint(siteDir string, files []torchFile) string {
	fp := gobfile.NewFingerprint(fmt.Sprintf("gates/%d\n%s", cacheFormat, readVersion(siteDir)))
	for _, f := range files {
		fp.File(f.rel, f.size, f.mtime)
	}
	return fp.Sum()
}

// Open returns the catalog of the torch tree under siteDir, read from
// cacheFile when that was built from the same tree (same torch version and
// file fingerprint), else scanned and written back to cacheFile. A cache
// that is missing, corrupt or stale is rebuilt; failing to write it is not
// an error for the caller, since the catalog itself is good.
func Open(ctx context.Context, siteDir, cacheFile string, opts Options) (*Catalog, error) {
	files, err := listTorchFiles(siteDir)
	if err != nil {
		return nil, err
	}
	fp := fingerprint(siteDir, files)
	if cat, err := Load(cacheFile); err == nil && cat.Fingerprint == fp {
		return cat, nil
	}
	cat, err := scanFiles(ctx, siteDir, files, opts)
	if err != nil {
		return nil, err
	}
	_ = cat.Save(cacheFile)
	return cat, nil
}

// Load reads a catalog saved by Save.
func Load(path string) (*Catalog, error) {
	var cf cacheFile
	if err := gobfile.Read(path, &cf); err != nil {
		return nil, fmt.Errorf("gates: load %s: %w", path, err)
	}
	if cf.Format != cacheFormat || cf.Catalog == nil {
		return nil, fmt.Errorf("gates: load %s: cache format %d, want %d", path, cf.Format, cacheFormat)
	}
	cf.Catalog.index()
	return cf.Catalog, nil
}

// Save writes the catalog to path atomically (a temporary file in the same
// directory, then a rename), so readers never see half a cache.
func (c *Catalog) Save(path string) error {
	if c == nil {
		return errors.New("gates: save nil catalog")
	}
	if err := gobfile.Write(path, cacheFile{Format: cacheFormat, Catalog: c}); err != nil {
		return fmt.Errorf("gates: save %s: %w", path, err)
	}
	return nil
}
