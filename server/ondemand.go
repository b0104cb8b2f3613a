package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// A package whose mirror is not complete yet answers on demand: the helper
// lists its files (names and sizes, about 100 KB for torch 2.11) and reads
// the few on the import path of the name asked, which are parsed as they
// are read. The files land where the complete mirror of that version
// will be (remote.MirrorDir), so that every answer names one path per
// file, before and after: a path an editor got on demand is the mirror's
// own once the bulk mirror replaces the directory (atomically: the
// directory holds no manifest until then, so nothing takes it for a
// complete mirror). Only when a complete mirror already stands there
// (the same version, files changed) does the tree go to a directory of
// its own under <cache>/ondemand.

const (
	// bulkHold is how long the bulk mirror waits for the first on-demand
	// answer before streaming the whole tree, which would otherwise share
	// the link with it.
	bulkHold = 3 * time.Second
	// maxBulkRetries bounds the background retries of a failed bulk
	// mirror in a row.
	maxBulkRetries = 3
	// onDemandMaxAge is when a leftover directory of an earlier run's
	// on-demand tree of its own (<cache>/ondemand) is removed.
	onDemandMaxAge = time.Hour
	// partialMaxAge is when a version's partial tree (files read on
	// demand where its mirror never completed) is removed, unused that
	// long.
	partialMaxAge = 7 * 24 * time.Hour
)

// quickState is one package answered on demand while its mirror loads.
type quickState struct {
	name string
	once sync.Once     // starts the open
	done chan struct{} // closed when ps or err is set
	ps   *pkgState
	err  error

	answerOnce sync.Once
	answered   chan struct{} // closed after the first answer from ps
	needOnce   sync.Once
	needed     chan struct{} // closed when a request waits for the complete mirror
}

// quickSlot returns the on-demand state of a package, creating it (not
// started) if needed.
func (s *session) quickSlot(name string) *quickState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.quick == nil {
		s.quick = map[string]*quickState{}
	}
	q, ok := s.quick[name]
	if !ok {
		q = &quickState{name: name, done: make(chan struct{}), answered: make(chan struct{}), needed: make(chan struct{})}
		s.quick[name] = q
	}
	return q
}

// dropQuick forgets a package's on-demand state once its mirror is ready.
func (s *session) dropQuick(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.quick[name]; ok {
		q.answerOnce.Do(func() { close(q.answered) })
		delete(s.quick, name)
	}
}

// answering returns the package state a query about qualname should use:
// the complete mirror when it is ready, else the on-demand tree, whichever
// is usable first. answered is to be called once the query has its answer.
func (s *session) answering(ctx context.Context, name, qualname string) (ps *pkgState, answered func(), err error) {
	full := s.start(name)
	select {
	case <-full.done:
		if full.err == nil || errors.Is(full.err, ErrNotOnTarget) || !s.hasQuick(name) {
			s.dropQuick(name)
			ps, err := s.pkg(ctx, name)
			return ps, func() {}, err
		}
		// The mirror failed while answers came on demand: they go on
		// coming so, while it is tried again.
		s.forgetFailed(full)
		full = s.start(name)
	default:
	}
	q := s.quickSlot(name)
	q.once.Do(func() {
		if !s.env.bg.Go(func() {
			defer close(q.done)
			q.ps, q.err = s.openQuick(s.env.bg.ctx, name, qualname)
		}) {
			q.err = errShutDown
			close(q.done)
		}
	})
	select {
	case <-full.done:
	case <-q.done:
		if q.err == nil {
			return q.ps, func() { q.answerOnce.Do(func() { close(q.answered) }) }, nil
		}
		if errors.Is(q.err, ErrNotOnTarget) {
			return nil, func() {}, q.err
		}
		// The on-demand path failed (an old helper without read_files,
		// a refused reply): the mirror answers.
	case <-ctx.Done():
		return nil, func() {}, ctx.Err()
	}
	ps, err = s.pkg(ctx, name)
	return ps, func() {}, err
}

// hasQuick reports whether a package has answered on demand.
func (s *session) hasQuick(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.quick[name]
	if !ok {
		return false
	}
	select {
	case <-q.done:
		return q.err == nil
	default:
		return false
	}
}

// forgetFailed drops a failed load so that the next start begins anew.
func (s *session) forgetFailed(ps *pkgState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pkgs[ps.name] == ps {
		delete(s.pkgs, ps.name)
	}
}

// retryBulk tries a failed bulk mirror again in the background while the
// package answers on demand, with a growing pause, at most
// maxBulkRetries times in a row; a request that needs the mirror tries
// again anyway.
func (s *session) retryBulk(ps *pkgState) {
	if !s.hasQuick(ps.name) {
		return
	}
	s.mu.Lock()
	if s.bulkRetries == nil {
		s.bulkRetries = map[string]int{}
	}
	n := s.bulkRetries[ps.name]
	if n >= maxBulkRetries {
		s.mu.Unlock()
		return
	}
	s.bulkRetries[ps.name] = n + 1
	s.mu.Unlock()
	pause := time.Second << n
	s.env.bg.Go(func() {
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.env.bg.ctx.Done():
			return
		}
		s.forgetFailed(ps)
		next := s.start(ps.name)
		<-next.done
		if next.err == nil {
			s.mu.Lock()
			delete(s.bulkRetries, ps.name)
			s.mu.Unlock()
		}
	})
}

// holdBulk delays the bulk mirror of a package until its first on-demand
// answer is out, a request needs the complete mirror (the flag catalog,
// implementations), or bulkHold passes.
func (s *session) holdBulk(ctx context.Context, name string) {
	q := s.quickSlot(name)
	t := time.NewTimer(bulkHold)
	defer t.Stop()
	select {
	case <-q.answered:
	case <-q.needed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// needMirror tells a held bulk mirror that a request waits for it.
func (s *session) needMirror(name string) {
	q := s.quickSlot(name)
	q.needOnce.Do(func() { close(q.needed) })
}

// openQuick makes the on-demand tree of a package: one round trip asks
// where it is, lists its files and reads the files the qualname's prefixes
// name; the rest is read as resolution needs it.
func (s *session) openQuick(ctx context.Context, name, qualname string) (*pkgState, error) {
	cctx, cancel := context.WithTimeout(ctx, s.env.connectTimeout)
	defer cancel()
	var (
		wg      sync.WaitGroup
		info    remote.PackageInfo
		infoErr error
		listing remote.FileListing
		listErr error
		first   remote.FetchResult
		readErr error
	)
	wg.Add(3)
	go func() { defer wg.Done(); info, infoErr = s.locate(cctx, name) }()
	go func() { defer wg.Done(); listing, listErr = s.client.ListFiles(cctx, name) }()
	go func() {
		defer wg.Done()
		first, readErr = s.client.ReadImportPath(cctx, name, qualname, prefixFiles(qualname))
	}()
	wg.Wait()
	switch {
	case infoErr != nil:
		return nil, infoErr
	case listErr != nil:
		return nil, fmt.Errorf("on-demand %s: %w", name, listErr)
	case listing.Site != info.Site || listing.Member != info.Member:
		return nil, fmt.Errorf("on-demand %s: the listing (%s/%s) and the package (%s/%s) disagree", name, listing.Site, listing.Member, info.Site, info.Member)
	}
	root, err := s.onDemandRoot(info)
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", name, err)
	}
	t := &onDemandTree{
		s: s, name: name, ctx: ctx, root: root, siteDir: filepath.Join(root, "site"),
		sizes:   make(map[string]int64, len(listing.Files)),
		fetched: map[string]bool{},
	}
	files := make([]pyindex.ListedFile, len(listing.Files))
	for i, f := range listing.Files {
		t.sizes[f.Path] = f.Size
		files[i] = pyindex.ListedFile{Path: f.Path, Size: f.Size}
	}
	if readErr == nil {
		t.fetchMu.Lock()
		for _, f := range first.Files {
			if _, err := t.store(f); err != nil {
				t.fetchMu.Unlock()
				return nil, err
			}
		}
		t.fetchMu.Unlock()
	}
	ix, err := pyindex.OpenListing(t.siteDir, files, t.read)
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", name, err)
	}
	ps := &pkgState{
		name: name, partial: true, done: make(chan struct{}), info: info, index: ix,
		mirror: &remote.MirrorTree{
			Root: root, SiteDir: t.siteDir, TargetDir: info.Site,
			Manifest: remote.Manifest{
				Target: s.spec.Name, Package: name, Version: info.Version, Member: info.Member,
				TargetPackageDir: info.Location, TargetSiteDir: info.Site,
			},
		},
	}
	close(ps.done)
	return ps, nil
}

// onDemandRoot is the directory an on-demand tree of the package info
// describes goes to: where its mirror will be, unless a complete mirror
// stands there already.
func (s *session) onDemandRoot(info remote.PackageInfo) (string, error) {
	final := remote.MirrorDir(s.env.cacheDir, s.spec, info)
	removeStale(filepath.Join(s.env.cacheDir, "ondemand"), time.Now().Add(-onDemandMaxAge))
	removePartial(filepath.Dir(final), final, time.Now().Add(-partialMaxAge))
	if _, err := os.Lstat(filepath.Join(final, manifestFile)); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Join(final, "site"), 0o755); err != nil {
			return "", err
		}
		return final, nil
	}
	odRoot := filepath.Join(s.env.cacheDir, "ondemand")
	if err := os.MkdirAll(odRoot, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(odRoot, info.Name+"-*")
}

// manifestFile marks a complete mirror (remote's manifest).
const manifestFile = "manifest.json"

// removePartial removes, from a target's cache directory, the partial
// trees (a version's directory without a manifest) last changed before
// cutoff, but keep.
func removePartial(dir, keep string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || p == keep || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(p, manifestFile)); !errors.Is(err, fs.ErrNotExist) {
			continue // a mirror, or something unknown: left alone
		}
		if info, err := os.Stat(filepath.Join(p, "site")); err != nil || info.ModTime().After(cutoff) {
			continue
		}
		removeTree(p)
	}
}

// prefixFiles are the files that may define each prefix of a dotted name:
// for torch.nn.Linear, torch/__init__.py, torch/nn/__init__.py, torch/nn.py
// and so on (the helper skips those that do not exist).
func prefixFiles(qualname string) []string {
	parts := strings.Split(qualname, ".")
	var out []string
	for i := 1; i <= len(parts) && len(out)+4 <= remote.MaxReadFiles; i++ {
		p := strings.Join(parts[:i], "/")
		out = append(out, p+"/__init__.py", p+"/__init__.pyi")
		if i > 1 {
			out = append(out, p+".py", p+".pyi")
		}
	}
	return out
}

// onDemandTree reads a package's files through the helper into a
// directory of their own, checking each against the listing.
type onDemandTree struct {
	s       *session
	name    string
	ctx     context.Context // the engine's lifetime
	root    string          // where the package's mirror will be (or a directory of its own)
	siteDir string
	sizes   map[string]int64 // the listing: path → size; read-only after openQuick
	// fetchMu serialises fetches, so that two queries needing the same
	// file read it once, and guards fetched.
	fetchMu sync.Mutex
	// fetched are the files this tree read from the target: a file an
	// earlier run left in the directory is read again (and replaced in
	// place, under the same path).
	fetched map[string]bool
}

// read supplies a file to the index: from the tree if it was read before,
// else through the helper.
func (t *onDemandTree) read(rel string) ([]byte, error) {
	local := filepath.Join(t.siteDir, filepath.FromSlash(rel))
	t.fetchMu.Lock()
	defer t.fetchMu.Unlock()
	if t.fetched[rel] || t.mirrored() {
		if data, err := os.ReadFile(local); err == nil {
			return data, nil
		}
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.s.env.connectTimeout)
	defer cancel()
	r, err := t.s.client.ReadFiles(ctx, t.name, []string{rel})
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", rel, err)
	}
	if len(r.Files) != 1 {
		return nil, fmt.Errorf("on-demand %s: not read (%v)", rel, r.Skipped)
	}
	return t.store(r.Files[0])
}

// mirrored reports whether the complete mirror has replaced the tree's
// directory: its files are the mirror's then, never written again.
func (t *onDemandTree) mirrored() bool {
	_, err := os.Lstat(filepath.Join(t.root, manifestFile))
	return err == nil
}

// store writes a fetched file into the tree after checking it against the
// listing: a listed path, inside the package, of the listed size. Once
// the mirror has replaced the tree, the data is only handed back. The
// caller holds fetchMu.
func (t *onDemandTree) store(f remote.FetchedFile) ([]byte, error) {
	want, ok := t.sizes[f.Path]
	switch {
	case !ok:
		return nil, fmt.Errorf("on-demand %s: %q is not in the listing: refused", t.name, f.Path)
	case want != int64(len(f.Data)):
		return nil, fmt.Errorf("on-demand %s: %s has %d bytes, the listing says %d: refused", t.name, f.Path, len(f.Data), want)
	case path.Clean(f.Path) != f.Path || path.IsAbs(f.Path) || strings.HasPrefix(f.Path, "../"):
		return nil, fmt.Errorf("on-demand %s: %q is not a clean relative path: refused", t.name, f.Path)
	}
	if t.mirrored() {
		return f.Data, nil
	}
	t.fetched[f.Path] = true
	local := filepath.Join(t.siteDir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", f.Path, err)
	}
	// Written aside and renamed: a reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(local), ".part-*")
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", f.Path, err)
	}
	_, werr := tmp.Write(f.Data)
	if err := errors.Join(werr, tmp.Chmod(0o444), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("on-demand %s: %w", f.Path, err)
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("on-demand %s: %w", f.Path, err)
	}
	return f.Data, nil
}

// removeStale removes on-demand directories last changed before cutoff.
func removeStale(root string, cutoff time.Time) {
	entries, err := os.ReadDir(root)
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

// removeTree removes a tree whose directories may be read-only.
func removeTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// mirrored reports, without waiting, whether a package's complete mirror
// is ready (it starts loading it if nobody has).
func (s *session) mirrored(name string) bool {
	ps := s.start(name)
	select {
	case <-ps.done:
		return ps.err == nil
	default:
		return false
	}
}

// mayBeFlag reports whether a dotted name could be a torch config flag:
// flags live in config modules and torch.backends. Other names need not
// wait for the flag catalog, which needs the whole mirror.
func mayBeFlag(qualname string) bool {
	for _, part := range strings.Split(qualname, ".") {
		if strings.Contains(part, "config") || part == "backends" || part == "_dynamo" || part == "_inductor" || part == "_functorch" || part == "fx" || part == "export" {
			return true
		}
	}
	return false
}
