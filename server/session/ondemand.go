package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// A package whose mirror is not complete yet answers on demand, from a
// remote.OnDemandTree: the files on the import path of the name asked are
// read in the first round trip and parsed as they are read; the index
// reads the others as resolution needs them. Once the bulk mirror is
// ready every query uses it.

const (
	// bulkHold is how long the bulk mirror waits for the first on-demand
	// answer before streaming the whole tree, which would otherwise share
	// the link with it.
	bulkHold = 3 * time.Second
	// maxBulkRetries bounds the background retries of a failed bulk
	// mirror in a row.
	maxBulkRetries = 3
)

// quickState is one package answered on demand while its mirror loads.
type quickState struct {
	name string
	once sync.Once     // starts the open
	done chan struct{} // closed when ps or err is set
	ps   *Package
	err  error

	answerOnce sync.Once
	answered   chan struct{} // closed after the first answer from ps
	needOnce   sync.Once
	needed     chan struct{} // closed when a request waits for the complete mirror
}

// quickSlot returns the on-demand state of a package, creating it (not
// started) if needed.
func (s *Session) quickSlot(name string) *quickState {
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
func (s *Session) dropQuick(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.quick[name]; ok {
		q.answerOnce.Do(func() { close(q.answered) })
		delete(s.quick, name)
	}
}

// Answering returns the package a query about qualname should use: the
// complete mirror when it is ready, else the on-demand tree, whichever is
// usable first. answered is to be called once the query has its answer
// (the bulk mirror waits for the first one).
func (s *Session) Answering(ctx context.Context, name, qualname string) (ps *Package, answered func(), err error) {
	if s.ReadOnly() {
		ps, err := s.Package(ctx, name) // the cache's mirror, or none
		return ps, func() {}, err
	}
	full := s.start(name)
	select {
	case <-full.done:
		if full.err == nil || errors.Is(full.err, ErrNotOnTarget) || !s.hasQuick(name) {
			s.dropQuick(name)
			ps, err := s.Package(ctx, name)
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
		if !s.opts.Work.Go(func() {
			defer close(q.done)
			q.ps, q.err = s.openQuick(s.opts.Work.Context(), name, qualname)
		}) {
			q.err = ErrShutDown
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
	ps, err = s.Package(ctx, name)
	return ps, func() {}, err
}

// hasQuick reports whether a package has answered on demand.
func (s *Session) hasQuick(name string) bool {
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
func (s *Session) forgetFailed(ps *Package) {
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
func (s *Session) retryBulk(ps *Package) {
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
	s.opts.Work.Go(func() {
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.opts.Work.Context().Done():
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
func (s *Session) holdBulk(ctx context.Context, name string) {
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
func (s *Session) needMirror(name string) {
	q := s.quickSlot(name)
	q.needOnce.Do(func() { close(q.needed) })
}

// openQuick makes the on-demand tree of a package: one round trip asks
// where it is, lists its files and reads the files the qualname's prefixes
// name; the rest is read as resolution needs it.
func (s *Session) openQuick(ctx context.Context, name, qualname string) (*Package, error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
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
	}
	src := remote.OnDemandSource{
		Client: s.client, Context: ctx, ReadTimeout: s.opts.ConnectTimeout,
		Spec: s.spec, Info: info, Listing: listing,
	}
	if readErr == nil {
		src.First = first.Files // a failed prefetch is read again as needed
	}
	t, err := remote.OpenOnDemand(s.opts.CacheDir, src)
	if err != nil {
		return nil, err
	}
	files := make([]pyindex.ListedFile, len(listing.Files))
	for i, f := range listing.Files {
		files[i] = pyindex.ListedFile{Path: f.Path, Size: f.Size}
	}
	m := t.Mirror()
	ix, err := pyindex.OpenListing(m.SiteDir, files, t.Read, t)
	if err != nil {
		return nil, fmt.Errorf("on-demand %s: %w", name, err)
	}
	ps := &Package{name: name, opts: &s.opts, partial: true, done: make(chan struct{}), info: info, index: ix, mirror: m}
	close(ps.done)
	return ps, nil
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

// Mirrored reports, without waiting, whether a package's complete mirror
// is ready (it starts loading it if nobody has).
func (s *Session) Mirrored(name string) bool {
	ps := s.start(name)
	select {
	case <-ps.done:
		return ps.err == nil
	default:
		return false
	}
}

// Usable returns the package when it answers now (its mirror ready, or its
// on-demand tree open), without starting or waiting for anything; nil
// otherwise.
func (s *Session) Usable(name string) *Package {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.pkgs[name]; ok {
		select {
		case <-ps.done:
			if ps.err == nil && ps.index != nil {
				return ps
			}
		default:
		}
	}
	if q, ok := s.quick[name]; ok {
		select {
		case <-q.done:
			if q.err == nil && q.ps != nil && q.ps.index != nil {
				return q.ps
			}
		default:
		}
	}
	return nil
}
