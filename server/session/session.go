// Package session is the engine's model of its targets, in the manner of
// gopls' cache: one Session per target (its connection, its resident
// helper, its packages), each Package's state (the mirror or on-demand
// tree, the index, the flag catalog, the compiled-op table, the lookup
// cache), and name resolution over them (Resolve, DefinitionAt). It knows
// nothing of documents, features or front ends: what it has to say goes to
// its Env.
package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// Session is the engine's view of one target: the connection, the
// resident helper, and the mirrored, indexed packages. Packages load in the
// background; until a package's mirror is complete, hover and definition
// answer from its on-demand tree (ondemand.go), and what needs the whole
// tree waits for the mirror.
type Session struct {
	env    Env
	opts   Options
	spec   remote.Spec
	target remote.Target
	client *remote.Client
	// readOnlyDir is the target's cache directory of a read-only session
	// (readonly.go); "" for a session that reaches its target.
	readOnlyDir string

	mu            sync.Mutex      // guards the fields below
	imported      map[string]bool // packages the helper has imported
	pkgs          map[string]*Package
	quick         map[string]*quickState     // packages answered on demand while they mirror
	locating      map[string]*locateCall     // package_info calls in flight, shared
	bulkRetries   map[string]int             // background retries of a failed bulk mirror, in a row
	effectiveVals map[string]*effectiveState // by config module
	lastFailure   string                     // the failure last shown to the user; "" once the target answers
}

// noteFailure records the target's current failure ("" for none) and
// reports whether it differs from the one last shown.
func (s *Session) noteFailure(msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.lastFailure != msg
	s.lastFailure = msg
	return changed
}

// ErrNotOnTarget marks names whose package is not installed on the target,
// or is not a third-party package torchlsp answers for.
var ErrNotOnTarget = errors.New("not on the target")

// New makes the session of the target spec names, reached through t; it
// owns t from then on.
func New(env Env, opts Options, spec remote.Spec, t remote.Target) *Session {
	return &Session{
		env:    env,
		opts:   opts,
		spec:   spec,
		target: t,
		client: remote.NewClientWith(t, spec, opts.HelperLimits),
		pkgs:   map[string]*Package{},

		effectiveVals: map[string]*effectiveState{},
	}
}

// Spec is the target's resolved configuration.
func (s *Session) Spec() remote.Spec { return s.spec }

// Target is the target's connection, for running programs on it.
func (s *Session) Target() remote.Target { return s.target }

// Client is the target's resident helper.
func (s *Session) Client() *remote.Client { return s.client }

// Close ends the helper and the connection.
func (s *Session) Close() error {
	return errors.Join(s.client.Close(), s.target.Close())
}

// Eager starts loading the packages the target lists, without waiting.
func (s *Session) Eager() {
	for _, name := range s.spec.Packages {
		s.start(name)
	}
}

// start begins loading a package if nobody has yet, and returns its state.
func (s *Session) start(name string) *Package {
	return s.startLoad(name, false)
}

// startLoad begins loading a package; fresh skips the cached mirror.
func (s *Session) startLoad(name string, fresh bool) *Package {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.pkgs[name]; ok && !fresh {
		return ps
	}
	ps := &Package{name: name, opts: &s.opts, fresh: fresh, done: make(chan struct{})}
	s.pkgs[name] = ps
	started := s.opts.Work.Go(func() {
		defer close(ps.done)
		ctx := s.opts.Work.Context()
		ps.err = s.load(ctx, ps)
		if ps.err != nil && !errors.Is(ps.err, ErrNotOnTarget) && ctx.Err() == nil {
			// Every request retries a failed load; the user hears of a
			// failure once, until it changes or the target recovers.
			if s.noteFailure(ps.err.Error()) {
				s.env.Message(ctx, LevelError, fmt.Sprintf("torchlsp: target %s: %v", s.spec.Name, ps.err))
			}
			s.env.Status(s.spec.Name, "", "error", ps.err.Error())
			// Answers come on demand meanwhile: nobody waits on the
			// mirror to ask again, so it is tried again here.
			s.retryBulk(ps)
		}
	})
	if !started {
		ps.err = ErrShutDown
		close(ps.done)
	}
	return ps
}

// Package waits until the named package's complete mirror is usable, or
// ctx ends. A failed load is retried on the next request, so a target that
// comes back is used.
func (s *Session) Package(ctx context.Context, name string) (*Package, error) {
	ps := s.start(name)
	select {
	case <-ps.done:
	default:
		s.needMirror(name) // a held bulk mirror starts now
		select {
		case <-ps.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if ps.err != nil {
		s.mu.Lock()
		if s.pkgs[name] == ps && !errors.Is(ps.err, ErrNotOnTarget) {
			delete(s.pkgs, name) // the next request tries again
		}
		s.mu.Unlock()
		return nil, ps.err
	}
	return ps, nil
}

// load makes a package usable: an existing complete mirror is used at once
// (a restart answers without touching the target); otherwise the package is
// located on the target and mirrored. The index opens lazily and builds in
// the background.
func (s *Session) load(ctx context.Context, ps *Package) error {
	if s.ReadOnly() {
		return s.loadReadOnly(ps)
	}
	cacheRoot := s.opts.CacheDir
	cached, err := remote.LookupMirror(cacheRoot, s.spec, ps.name)
	if err != nil || ps.fresh {
		cached = nil
	}
	if cached != nil && !s.opts.ValidateCache {
		// Answer from the cache at once; check the target in the
		// background.
		if err := s.use(ps, cached, infoOf(cached)); err != nil {
			return err
		}
		s.opts.Work.Go(func() { s.revalidate(ctx, ps) })
		return nil
	}

	s.env.Status(s.spec.Name, "", "connecting", "")
	prog := s.env.StartProgress(ctx, fmt.Sprintf("torchlsp: %s on %s", ps.name, s.spec.Name))
	fail := func(err error) error {
		if ctx.Err() != nil {
			prog.End("cancelled")
			return ctx.Err()
		}
		if errors.Is(err, ErrNotOnTarget) {
			prog.End("") // nothing went wrong: torchlsp does not answer for it
			return err
		}
		prog.End("failed: " + err.Error())
		return err
	}
	prog.Report("connecting and starting the helper", -1)
	info, err := s.locate(ctx, ps.name)
	if err != nil {
		return fail(err)
	}
	m, done := cached, "ready (cached mirror)"
	if m == nil || !sameInstall(infoOf(m), info) {
		// The first answer comes on demand; the whole tree waits for it
		// rather than share the link.
		if !ps.fresh { // a re-mirror has the old mirror to answer meanwhile
			s.holdBulk(ctx, ps.name)
		}
		if m, err = s.mirror(ctx, info, prog); err != nil {
			return fail(err)
		}
		done = "mirrored"
	}
	if err := s.use(ps, m, info); err != nil {
		return fail(err)
	}
	ps.confirmed.Store(true)
	prog.End(fmt.Sprintf("%s %s %s", ps.name, info.Version, done))
	return nil
}

// use makes a mirror the package's source of answers.
func (s *Session) use(ps *Package, m *remote.MirrorTree, info remote.PackageInfo) error {
	ps.mirror, ps.info = m, info
	if err := s.openIndex(ps); err != nil {
		return err
	}
	if ps.name == "torch" {
		ps.startOpTable()
	}
	s.noteFailure("")
	s.env.Status(s.spec.Name, info.Version, "ready", "")
	return nil
}

// sameInstall reports whether two descriptions of a package name the same
// installed files.
func sameInstall(a, b remote.PackageInfo) bool {
	return a.Version == b.Version && a.Location == b.Location && a.FilesCount == b.FilesCount && a.Bytes == b.Bytes
}

// locateCall is one package_info call that concurrent callers share.
type locateCall struct {
	done chan struct{}
	info remote.PackageInfo
	err  error
}

// locate asks the helper where a package is installed. Concurrent callers
// (the mirror and the on-demand tree starting together) share one call:
// it walks the package on the target.
func (s *Session) locate(ctx context.Context, name string) (remote.PackageInfo, error) {
	s.mu.Lock()
	if s.locating == nil {
		s.locating = map[string]*locateCall{}
	}
	c, ok := s.locating[name]
	if !ok {
		c = &locateCall{done: make(chan struct{})}
		s.locating[name] = c
		s.mu.Unlock()
		started := s.opts.Work.Go(func() {
			c.info, c.err = s.locateNow(s.opts.Work.Context(), name)
			s.mu.Lock()
			delete(s.locating, name) // the next caller asks afresh
			s.mu.Unlock()
			close(c.done)
		})
		if !started {
			s.mu.Lock()
			delete(s.locating, name)
			s.mu.Unlock()
			c.err = ErrShutDown
			close(c.done)
		}
	} else {
		s.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.info, c.err
	case <-ctx.Done():
		return remote.PackageInfo{}, ctx.Err()
	}
}

// locateNow asks the helper where a package is installed.
func (s *Session) locateNow(ctx context.Context, name string) (remote.PackageInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	info, err := s.client.PackageInfo(ctx, name)
	if remote.IsRemoteError(err, "ModuleNotFoundError") || (err == nil && info.Location == "") {
		return info, fmt.Errorf("%s: %w (python %s%s)", name, ErrNotOnTarget, s.spec.Python, userSiteNote(s.spec))
	}
	if remote.IsRemoteError(err, "ValueError") {
		// No Python source (a frozen or built-in module of the standard
		// library): the user's main Python server speaks for it.
		return info, fmt.Errorf("%s has no Python source on the target: %w", name, ErrNotOnTarget)
	}
	if err != nil {
		return info, fmt.Errorf("locate %s: %w", name, err)
	}
	if !s.answersFor(name, info) {
		return info, fmt.Errorf("%s is not a third-party package: %w", name, ErrNotOnTarget)
	}
	return info, nil
}

// answersFor decides whether torchlsp speaks about a package: the ones the
// target lists, and other installed third-party packages. The standard
// library is left to the user's main Python server.
func (s *Session) answersFor(name string, info remote.PackageInfo) bool {
	for _, p := range s.spec.Packages {
		if p == name {
			return true
		}
	}
	site := filepath.Base(info.Site)
	return site == "site-packages" || site == "dist-packages"
}

func (s *Session) mirror(ctx context.Context, info remote.PackageInfo, prog Progress) (*remote.MirrorTree, error) {
	prog.Report(fmt.Sprintf("mirroring %s %s (%d files)", info.Name, info.Version, info.FilesCount), 0)
	s.env.Status(s.spec.Name, info.Version, "indexing", "mirroring")
	var last int
	m, err := remote.MirrorWith(ctx, s.target, s.spec, info, s.opts.CacheDir, remote.MirrorOptions{
		Limits: s.opts.MirrorLimits,
		Progress: func(done, total int64) {
			if total <= 0 {
				return
			}
			pct := int(done * 100 / total)
			if pct != last {
				last = pct
				prog.Report(fmt.Sprintf("mirroring %s %s", info.Name, info.Version), pct)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if skipped := m.Skipped(); len(skipped) > 0 {
		names := make([]string, 0, min(len(skipped), 5))
		for i, f := range skipped {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(skipped)-5))
				break
			}
			names = append(names, fmt.Sprintf("%s (%s)", f.Path, f.Reason))
		}
		s.env.Log(ctx, LevelWarning, fmt.Sprintf("torchlsp: %s %s on %s: %d file(s) not mirrored, so not indexed: %s",
			info.Name, info.Version, s.spec.Name, len(skipped), strings.Join(names, ", ")))
	}
	return m, nil
}

func (s *Session) openIndex(ps *Package) error {
	cacheFile := filepath.Join(ps.mirror.Root, "index.bin")
	ix, err := pyindex.Open(ps.mirror.SiteDir, cacheFile, pyindex.WithParseBudget(s.opts.Parses))
	if err != nil {
		return fmt.Errorf("index %s: %w", ps.name, err)
	}
	ps.index = ix
	s.opts.Work.Go(func() {
		ctx := s.opts.Work.Context()
		if err := ix.Build(ctx); err != nil && ctx.Err() == nil {
			s.env.Log(ctx, LevelWarning, fmt.Sprintf("index %s: %v", ps.name, err))
		}
		if n := ix.Stats().NotParsed; n > 0 {
			s.env.Log(ctx, LevelWarning, fmt.Sprintf(
				"index %s on %s: %d file(s) not indexed: their parse stopped at its time or memory limit (a file of tiny statements, or text the parser cannot read in time); the names in them are looked up on the target",
				ps.name, s.spec.Name, n))
		}
		if n := ix.Stats().Truncated; n > 0 {
			s.env.Log(ctx, LevelWarning, fmt.Sprintf(
				"index %s on %s: %d files hold more names than the index keeps (%d a file, %d in all); the names past that are looked up on the target",
				ps.name, s.spec.Name, n, pyindex.MaxNamesPerFile, pyindex.MaxNamesPerIndex))
		}
	})
	return nil
}

// revalidate compares a cached mirror with what the target has now and
// mirrors again when the version moved.
func (s *Session) revalidate(ctx context.Context, ps *Package) {
	info, err := s.locate(ctx, ps.name)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrNotOnTarget) {
			// Answers still come from the cache, but the user must see why
			// the target is not reached (a changed host key, a host
			// down), once per failure, with the fix the error names.
			msg := fmt.Sprintf("torchlsp: target %s: answering from the cached mirror of %s %s, because the target cannot be reached: %v", s.spec.Name, ps.name, ps.info.Version, err)
			if s.noteFailure(err.Error()) {
				s.env.Message(ctx, LevelWarning, msg)
			}
			s.env.Status(s.spec.Name, ps.info.Version, "ready", "cached mirror; the target cannot be reached: "+err.Error())
		}
		return
	}
	if sameInstall(info, ps.info) {
		ps.confirmed.Store(true)
		return
	}
	s.env.Message(ctx, LevelInfo, fmt.Sprintf("torchlsp: %s on %s changed from %s to %s; mirroring again", ps.name, s.spec.Name, ps.info.Version, info.Version))
	// Queries keep using the old mirror until the new one is ready.
	next := &Package{name: ps.name, opts: &s.opts, fresh: true, done: make(chan struct{})}
	s.opts.Work.Go(func() {
		defer close(next.done)
		next.err = s.load(ctx, next)
		if next.err != nil {
			if ctx.Err() == nil {
				s.env.Message(ctx, LevelError, fmt.Sprintf("torchlsp: target %s: %v", s.spec.Name, next.err))
			}
			return
		}
		s.mu.Lock()
		if s.pkgs[ps.name] == ps {
			s.pkgs[ps.name] = next
		}
		s.mu.Unlock()
		s.env.PackagesChanged(s.spec.Name)
	})
}

// LoadedPackages returns the packages whose mirror is in use, without
// waiting for any that is still loading.
func (s *Session) LoadedPackages() []*Package {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Package
	for _, ps := range s.pkgs {
		select {
		case <-ps.done:
			if ps.err == nil && ps.mirror != nil {
				out = append(out, ps)
			}
		default:
		}
	}
	return out
}

// TopPackage returns the first component of a dotted name.
func TopPackage(qualname string) string {
	if i := strings.IndexByte(qualname, '.'); i >= 0 {
		return qualname[:i]
	}
	return qualname
}

// infoOf rebuilds what the target said about a package from a mirror's
// manifest, for a mirror used without asking the target.
func infoOf(m *remote.MirrorTree) remote.PackageInfo { return m.Info() }

// importing runs a helper call that may import pkg on the target, which
// takes seconds for torch (6 s on a GPU host): the first such call shows
// work-done progress, so the wait has a name.
func (s *Session) importing(ctx context.Context, pkg string, call func() error) error {
	s.mu.Lock()
	done := s.imported[pkg]
	s.mu.Unlock()
	if done {
		return call()
	}
	prog := s.env.StartProgress(ctx, fmt.Sprintf("torchlsp: importing %s on %s", pkg, s.spec.Name))
	start := time.Now()
	err := call()
	if err != nil && !remote.IsRemoteError(err, "") {
		// The helper or the link failed; a Python exception (a name the
		// package lacks) still means the import ran.
		prog.End("failed: " + err.Error())
		return err
	}
	prog.End(fmt.Sprintf("done in %.1f s", time.Since(start).Seconds()))
	s.mu.Lock()
	if s.imported == nil {
		s.imported = map[string]bool{}
	}
	s.imported[pkg] = true
	s.mu.Unlock()
	return err
}

// userSiteNote says, inside a parenthesis, how to reach a package
// installed with pip --user, which the interpreter does not see unless the
// target asks for it.
func userSiteNote(s remote.Spec) string {
	if s.UserSite {
		return ""
	}
	return "; without the user site: set user_site = true for a package installed with pip install --user"
}

// FreeThreaded reports whether the target's interpreter runs Python
// threads at once (built without the GIL, and not started with it turned
// back on), as the helper's hello says; false for a read-only session and
// when the helper does not answer.
func (s *Session) FreeThreaded(ctx context.Context) bool {
	if s.ReadOnly() || s.client == nil {
		return false
	}
	h, err := s.client.Hello(ctx)
	return err == nil && h.FreeThreaded()
}

// FreeThreadedKnown is FreeThreaded as far as a helper has already said,
// without starting one or waiting: known is false until one has started
// on the target.
func (s *Session) FreeThreadedKnown() (free, known bool) {
	if s.ReadOnly() || s.client == nil {
		return false, true
	}
	h, ok := s.client.KnownHello()
	return ok && h.FreeThreaded(), ok
}
