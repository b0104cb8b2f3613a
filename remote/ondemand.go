package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A package whose mirror is not complete yet can answer on demand: the
// helper lists its files (names and sizes, about 100 KB for torch 2.11)
// and reads the few a question needs. The files land where the complete
// mirror of that version will be (MirrorDir), so that every answer names
// one path per file, before and after: a path an editor got on demand is
// the mirror's own once the bulk mirror replaces the directory
// (atomically: the directory holds no manifest until then, so nothing,
// LookupMirror included, takes it for a complete mirror). Where the
// complete mirror of the same install stands already, the tree reads it.
// Only when a complete mirror of the same version whose files changed
// stands there does the tree go to a directory of its own under
// <cache>/ondemand.

const (
	// onDemandDirName is the on-demand trees' directory under the cache
	// root.
	onDemandDirName = "ondemand"
	// onDemandMaxAge is when a leftover directory of an earlier run's
	// on-demand tree of its own (<cache>/ondemand) is removed.
	onDemandMaxAge = time.Hour
	// partialMaxAge is when a version's partial tree (files read on
	// demand where its mirror never completed) is removed, unused that
	// long.
	partialMaxAge = 7 * 24 * time.Hour
)

// OnDemandSource is what an on-demand tree is made from: what the helper
// said about the package, the files it read already, and how to read
// more.
type OnDemandSource struct {
	Client *Client
	// Context is the tree's lifetime: a read never outlives it.
	Context context.Context
	// ReadTimeout bounds one read through the helper.
	ReadTimeout time.Duration
	Spec        Spec
	Info        PackageInfo // package_info's answer
	Listing     FileListing // list_files' answer
	// First are files read already (the import path of the first name
	// asked); each is checked against the listing like any other.
	First []FetchedFile
}

// OnDemandTree is a package's files read through the helper as they are
// needed, into the directory its mirror will take. Every file is checked against the
// listing (a listed, clean path of the package, of the listed size) and
// written aside then renamed, read-only, so a reader never sees half a
// file. Its Mirror maps paths as a mirror's does.
type OnDemandTree struct {
	mirror MirrorTree
	src    OnDemandSource
	sizes  map[string]int64 // the listing: path → size; read-only after OpenOnDemand
	// fetchMu serialises fetches, so that two queries needing the same
	// file read it once, and guards fetched.
	fetchMu sync.Mutex
	// fetched are the files this tree read from the target: a file an
	// earlier run left in the directory is read again (and replaced in
	// place, under the same path).
	fetched map[string]bool
}

// OpenOnDemand makes a package's on-demand tree under cacheRoot, where
// its mirror will be, holding src.First; leftover trees of earlier runs
// are removed.
func OpenOnDemand(cacheRoot string, src OnDemandSource) (*OnDemandTree, error) {
	info, listing := src.Info, src.Listing
	if listing.Site != info.Site || listing.Member != info.Member {
		return nil, fmt.Errorf("on-demand %s: the listing (%s/%s) and the package (%s/%s) disagree", info.Name, listing.Site, listing.Member, info.Site, info.Member)
	}
	if err := validMember(info.Member); err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", info.Name, err)
	}
	root, err := onDemandRoot(cacheRoot, src.Spec, info)
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", info.Name, err)
	}
	t := &OnDemandTree{
		mirror: MirrorTree{
			Root: root, SiteDir: filepath.Join(root, siteDirName), TargetDir: info.Site,
			Manifest: Manifest{
				Target: src.Spec.Name, Package: info.Name, Version: info.Version, Member: info.Member,
				TargetPackageDir: info.Location, TargetSiteDir: info.Site,
			},
		},
		src:     src,
		sizes:   make(map[string]int64, len(listing.Files)),
		fetched: map[string]bool{},
	}
	t.src.First = nil
	for _, f := range listing.Files {
		t.sizes[f.Path] = f.Size
	}
	t.fetchMu.Lock()
	defer t.fetchMu.Unlock()
	for _, f := range src.First {
		if _, err := t.store(f); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// onDemandRoot is the directory an on-demand tree of the package info
// describes goes to: where its mirror will be, unless a complete mirror
// stands there already.
func onDemandRoot(cacheRoot string, spec Spec, info PackageInfo) (string, error) {
	final := MirrorDir(cacheRoot, spec, info)
	odRoot := filepath.Join(cacheRoot, onDemandDirName)
	removeStaleTrees(odRoot, time.Now().Add(-onDemandMaxAge))
	removePartial(filepath.Dir(final), final, time.Now().Add(-partialMaxAge))
	if _, err := os.Lstat(filepath.Join(final, manifestName)); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Join(final, siteDirName), 0o755); err != nil {
			return "", err
		}
		return final, nil
	}
	if completeMirrorOf(final, info) {
		// The complete mirror of this very install stands there (a
		// command-line run answers while it checks its cache with the
		// target): the tree reads its files, and every answer names the
		// mirror's own paths, from this run and the next.
		return final, nil
	}
	if err := os.MkdirAll(odRoot, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(odRoot, sanitize(info.Name)+"-*")
}

// completeMirrorOf reports whether root holds a complete mirror of the
// install info describes: the same package, version and location, and the
// file count and size the target states now. The mirror is opened as
// LookupMirror opens one (its files counted and measured against the
// manifest), so a damaged one is never read for an answer.
func completeMirrorOf(root string, info PackageInfo) bool {
	m, err := OpenMirror(root)
	if err != nil {
		return false
	}
	have := m.Info()
	return have.Name == info.Name && have.Member == info.Member && have.Site == info.Site &&
		have.Version == info.Version && have.Location == info.Location &&
		have.FilesCount == info.FilesCount && have.Bytes == info.Bytes
}

// removePartial removes, from a target's cache directory, the partial
// trees (a version's directory without a manifest) last changed before
// cutoff, but keep.
func removePartial(dir, keep string, cutoff time.Time) {
	entries, err := readCacheDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || p == keep || strings.HasPrefix(e.Name(), ".") {
			continue // a mirror being written is a ".tmp-" one
		}
		if _, err := os.Lstat(filepath.Join(p, manifestName)); !errors.Is(err, fs.ErrNotExist) {
			continue // a mirror, or something unknown: left alone
		}
		if info, err := os.Stat(filepath.Join(p, siteDirName)); err != nil || info.ModTime().After(cutoff) {
			continue
		}
		removeTree(p)
	}
}

// Mirror is the tree seen as a mirror, to map paths between it and the
// target. It is not complete: only the files read are there.
func (t *OnDemandTree) Mirror() *MirrorTree { return &t.mirror }

// Files is the package's listing.
func (t *OnDemandTree) Files() []ListedFile { return t.src.Listing.Files }

// Read returns a file of the package (rel is relative to the site dir):
// from the tree if it was read before, else through the helper.
func (t *OnDemandTree) Read(rel string) ([]byte, error) {
	local := filepath.Join(t.mirror.SiteDir, filepath.FromSlash(rel))
	t.fetchMu.Lock()
	defer t.fetchMu.Unlock()
	if t.fetched[rel] || t.mirrored() {
		// A file of the cache, read as one (readCacheFile): a FIFO or
		// a link left in its place is read again from the target.
		if data, err := readCacheFile(local, DefaultMirrorLimits().MaxFileBytes); err == nil {
			return data, nil
		}
	}
	ctx, cancel := t.readContext(t.src.Context)
	defer cancel()
	r, err := t.src.Client.ReadFiles(ctx, t.src.Info.Name, []string{rel})
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", rel, err)
	}
	if len(r.Files) != 1 {
		return nil, fmt.Errorf("on-demand %s: not read (%v)", rel, r.Skipped)
	}
	return t.store(r.Files[0])
}

// Mentioning lists the package's files whose text on the target holds
// one of words as a whole word (Client.SearchFiles): one round trip
// instead of reading the whole package. Every path is one of the
// listing's.
func (t *OnDemandTree) Mentioning(ctx context.Context, words []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for chunk := range slices.Chunk(words, MaxSearchWords) {
		paths, err := t.search(ctx, SearchQuery{Words: chunk})
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// Subsequence lists the package's files whose text on the target holds a
// word with lower's bytes in order, ASCII case folded: the files that may
// define a name a workspace-symbol query matches.
func (t *OnDemandTree) Subsequence(ctx context.Context, lower string) ([]string, error) {
	return t.search(ctx, SearchQuery{Subsequence: lower})
}

// search is one search_files request.
func (t *OnDemandTree) search(ctx context.Context, q SearchQuery) ([]string, error) {
	ctx, cancel := t.readContext(ctx)
	defer cancel()
	paths, err := t.src.Client.SearchFiles(ctx, t.src.Info.Name, q)
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", t.src.Info.Name, err)
	}
	for _, p := range paths {
		if _, ok := t.sizes[p]; !ok {
			return nil, fmt.Errorf("on-demand %s: search_files named %q, which is not in the listing: refused", t.src.Info.Name, truncate(p, 200))
		}
	}
	return paths, nil
}

// Prefetch reads those of rels the tree does not hold yet, as few
// read_files requests as the limits allow (MaxReadFiles paths,
// MaxReadBytes of contents each), so that the reads that follow find
// them: a query that is about to parse a dozen files pays one round trip,
// not twelve. A file it cannot read is left for Read to try (and report).
func (t *OnDemandTree) Prefetch(ctx context.Context, rels []string) {
	t.fetchMu.Lock()
	defer t.fetchMu.Unlock()
	if t.mirrored() {
		return
	}
	var batch []string
	var bytes int64
	flush := func() {
		if len(batch) == 0 {
			return
		}
		rctx, cancel := t.readContext(ctx)
		defer cancel()
		r, err := t.src.Client.ReadFiles(rctx, t.src.Info.Name, batch)
		batch, bytes = batch[:0], 0
		if err != nil {
			return
		}
		for _, f := range r.Files {
			_, _ = t.store(f) // a refused file is read (and refused) again by Read
		}
	}
	for _, rel := range rels {
		size, listed := t.sizes[rel]
		if !listed || t.fetched[rel] || size > MaxReadBytes {
			continue
		}
		if len(batch) == MaxReadFiles || bytes+size > MaxReadBytes {
			flush()
		}
		batch = append(batch, rel)
		bytes += size
	}
	flush()
}

// readContext bounds one request of the tree: the caller's context, the
// tree's lifetime and ReadTimeout.
func (t *OnDemandTree) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, t.src.ReadTimeout)
	stop := context.AfterFunc(t.src.Context, cancel)
	return ctx, func() { stop(); cancel() }
}

// mirrored reports whether the complete mirror has replaced the tree's
// directory: its files are the mirror's then, never written again.
func (t *OnDemandTree) mirrored() bool {
	_, err := os.Lstat(filepath.Join(t.mirror.Root, manifestName))
	return err == nil
}

// store writes a fetched file into the tree after checking it against the
// listing: a listed path, a clean relative path of a source file inside
// the package (the checks a mirror's stream entries pass), of the listed
// size. Once the mirror has replaced the tree, the data is only handed
// back. The caller holds fetchMu.
func (t *OnDemandTree) store(f FetchedFile) ([]byte, error) {
	name := t.src.Info.Name
	want, ok := t.sizes[f.Path]
	switch {
	case !ok:
		return nil, fmt.Errorf("on-demand %s: %q is not in the listing: refused", name, truncate(f.Path, 200))
	case want != int64(len(f.Data)):
		return nil, fmt.Errorf("on-demand %s: %s has %d bytes, the listing says %d: refused", name, f.Path, len(f.Data), want)
	}
	if _, err := checkName(f.Path, t.src.Info.Member, t.src.Info.IsPackage); err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", name, err)
	}
	if t.mirrored() {
		return f.Data, nil
	}
	t.fetched[f.Path] = true
	local := filepath.Join(t.mirror.SiteDir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", f.Path, err)
	}
	if err := writeAside(local, f.Data); err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", f.Path, err)
	}
	return f.Data, nil
}

// writeAside writes a read-only file beside p and renames it to p: a
// reader sees the whole file or none.
func writeAside(p string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".part-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Chmod(0o444), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// removeStaleTrees removes the trees under root last changed before
// cutoff.
func removeStaleTrees(root string, cutoff time.Time) {
	entries, err := readCacheDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() || info.ModTime().After(cutoff) {
			continue
		}
		removeTree(filepath.Join(root, e.Name()))
	}
}

// SiteRel returns the path of a file under the site dir of a mirror in
// the cache (<cache>/<target>/<id>/<package>/site/REL, or an on-demand
// tree's <cache>/ondemand/<package>/site/REL), slash-separated, following
// symbolic links (a site view links to mirrors).
func SiteRel(cache, file string) (string, bool) {
	if cache == "" {
		return "", false
	}
	if c, err := filepath.EvalSymlinks(cache); err == nil {
		cache = c
	}
	if f, err := filepath.EvalSymlinks(file); err == nil {
		file = f
	}
	inCache, err := filepath.Rel(cache, file)
	if err != nil || strings.HasPrefix(inCache, "..") {
		return "", false
	}
	parts := strings.Split(filepath.ToSlash(inCache), "/")
	for i := 2; i < len(parts)-1; i++ {
		if parts[i] == siteDirName {
			return path.Join(parts[i+1:]...), true
		}
	}
	return "", false
}
