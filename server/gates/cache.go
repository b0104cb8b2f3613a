package gates

import (
	"context"
	"fmt"

	"github.com/torchlsp/torchlsp/server/internal/gobfile"
	"github.com/torchlsp/torchlsp/server/internal/torchtree"
)

// cacheFormat changes whenever the catalog's meaning or layout does, so an
// old cache is rebuilt rather than misread.
const cacheFormat = 1

// catalogCache keeps a catalog beside its mirror.
func catalogCache() gobfile.Cache[Catalog] {
	return gobfile.Cache[Catalog]{
		Kind: "gates", Format: cacheFormat,
		Fingerprint: func(c *Catalog) string { return c.Fingerprint },
		Loaded:      (*Catalog).index,
	}
}

// fingerprint identifies a torch tree: torch's version and every .py
// file's path, size and modification time.
func fingerprint(siteDir string, files []torchtree.File) string {
	return torchtree.Fingerprint(fmt.Sprintf("gates/%d", cacheFormat), siteDir, files)
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
	return catalogCache().Open(cacheFile, fingerprint(siteDir, files), func() (*Catalog, error) {
		return scanFiles(ctx, siteDir, files, opts)
	})
}

// Load reads a catalog saved by Save.
func Load(path string) (*Catalog, error) { return catalogCache().Load(path) }

// Save writes the catalog to path atomically (a temporary file in the same
// directory, then a rename), so readers never see half a cache.
func (c *Catalog) Save(path string) error { return catalogCache().Save(path, c) }
