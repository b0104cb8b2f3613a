package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// session is the engine's view of one target: the connection, the resident
// helper, and the mirrored, indexed packages. Packages load in the
// background; until a package's mirror is complete, hover and definition
// answer from its on-demand tree (ondemand.go), and what needs the whole
// tree waits for the mirror.
type session struct {
	env    sessionEnv
	spec   remote.Spec
	target remote.Target
	client *remote.Client

	mu            sync.Mutex      // guards the fields below
	imported      map[string]bool // packages the helper has imported
	pkgs          map[string]*pkgState
	quick         map[string]*quickState     // packages answered on demand while they mirror
	locating      map[string]*locateCall     // package_info calls in flight, shared
	bulkRetries   map[string]int             // background retries of a failed bulk mirror, in a row
	effectiveVals map[string]*effectiveState // by config module
	lastFailure   string                     // the failure last shown to the user; "" once the target answers
}

// noteFailure records the target's current failure ("" for none) and
// reports whether it differs from the one last shown.
func (s *session) noteFailure(msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.lastFailure != msg
	s.lastFailure = msg
	return changed
}

// pkgState is one package of one target. done closes when loading ended,
// successfully or not.
type pkgState struct {
	name  string
	fresh bool // skip the cached mirror: the target was seen to differ from it
	// partial marks an on-demand tree (server/ondemand.go): what needs
	// the whole tree (op table, flag catalog, site view) is not taken
	// from it.
	partial bool
	done    chan struct{}
	err     error
	info    remote.PackageInfo
	mirror  *remote.MirrorTree
	index   *pyindex.Index
	loaded  time.Duration // time from request to usable index
	gates   catalogState
	impls   implState // compiled-op registrations, scanned once per mirror
	// lookups caches resolved names; it lives and dies with this mirror.
	lookups lookupCache
	// confirmed is set once the target said this mirror is its current
	// install (a fresh mirror, or a cached one revalidated); until then a
	// cached mirror may be of a version the target has since replaced.
	confirmed atomic.Bool
}

// ErrNotOnTarget marks names whose package is not installed on the target,
// or is not a third-party package torchlsp answers for.
var ErrNotOnTarget = errors.New("not on the target")

// sessionEnv is what a session needs from the engine that owns it.
type sessionEnv struct {
	bg     *background // runs loads and checks; its context is the engine's lifetime
	notify Notifier
	// status reports a target's state for the status item.
	status         func(target, version, state, msg string)
	cacheDir       string // mirrors live under it
	connectTimeout time.Duration
	inspectTimeout time.Duration
	// validateCache makes a cached mirror wait for the target's word
	// that it is current (one-shot command-line runs).
	validateCache bool
	// packagesChanged tells the engine a package was mirrored again (its
	// site view follows).
	packagesChanged func(target string)
	// Bounds on what a target may send; zero fields take remote's
	// defaults.
	mirrorLimits remote.MirrorLimits
	helperLimits remote.HelperLimits
}

func newSession(env sessionEnv, spec remote.Spec, t remote.Target) *session {
	return &session{
		env:    env,
		spec:   spec,
		target: t,
		client: remote.NewClientWith(t, spec, env.helperLimits),
		pkgs:   map[string]*pkgState{},

		effectiveVals: map[string]*effectiveState{},
	}
}

func (s *session) close() error {
	return errors.Join(s.client.Close(), s.target.Close())
}

// eager starts loading the packages the target lists, without waiting.
func (s *session) eager() {
	for _, name := range s.spec.Packages {
		s.start(name)
	}
}

// start begins loading a package if nobody has yet, and returns its state.
func (s *session) start(name string) *pkgState {
	return s.startLoad(name, false)
}

// startLoad begins loading a package; fresh skips the cached mirror.
func (s *session) startLoad(name string, fresh bool) *pkgState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.pkgs[name]; ok && !fresh {
		return ps
	}
	ps := &pkgState{name: name, fresh: fresh, done: make(chan struct{})}
	s.pkgs[name] = ps
	started := s.env.bg.Go(func() {
		defer close(ps.done)
		start := time.Now()
		ps.err = s.load(s.env.bg.ctx, ps)
		ps.loaded = time.Since(start)
		if ps.err != nil && !errors.Is(ps.err, ErrNotOnTarget) && s.env.bg.ctx.Err() == nil {
			// Every request retries a failed load; the user hears of a
			// failure once, until it changes or the target recovers.
			if s.noteFailure(ps.err.Error()) {
				s.env.notify.ShowMessage(s.env.bg.ctx, MessageError, fmt.Sprintf("torchlsp: target %s: %v", s.spec.Name, ps.err))
			}
			s.env.status(s.spec.Name, "", "error", ps.err.Error())
			// Answers come on demand meanwhile: nobody waits on the
			// mirror to ask again, so it is tried again here.
			s.retryBulk(ps)
		}
	})
	if !started {
		ps.err = errShutDown
		close(ps.done)
	}
	return ps
}

// pkg waits until the named package is usable, or ctx ends. A failed load
// is retried on the next request, so a target that comes back is used.
func (s *session) pkg(ctx context.Context, name string) (*pkgState, error) {
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
func (s *session) load(ctx context.Context, ps *pkgState) error {
	cacheRoot := s.env.cacheDir
	cached, err := remote.LookupMirror(cacheRoot, s.spec, ps.name)
	if err != nil || ps.fresh {
		cached = nil
	}
	if cached != nil && !s.env.validateCache {
		// Answer from the cache at once; check the target in the
		// background.
		if err := s.use(ps, cached, infoOf(cached)); err != nil {
			return err
		}
		s.env.bg.Go(func() { s.revalidate(ctx, ps) })
		return nil
	}

	s.env.status(s.spec.Name, "", "connecting", "")
	prog := s.env.notify.StartProgress(ctx, fmt.Sprintf("torchlsp: %s on %s", ps.name, s.spec.Name), false)
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
func (s *session) use(ps *pkgState, m *remote.MirrorTree, info remote.PackageInfo) error {
	ps.mirror, ps.info = m, info
	if err := s.openIndex(ps); err != nil {
		return err
	}
	if ps.name == "torch" {
		ps.startOpTable(s.env.bg)
	}
	s.noteFailure("")
	s.env.status(s.spec.Name, info.Version, "ready", "")
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
func (s *session) locate(ctx context.Context, name string) (remote.PackageInfo, error) {
	s.mu.Lock()
	if s.locating == nil {
		s.locating = map[string]*locateCall{}
	}
	c, ok := s.locating[name]
	if !ok {
		c = &locateCall{done: make(chan struct{})}
		s.locating[name] = c
		s.mu.Unlock()
		started := s.env.bg.Go(func() {
			c.info, c.err = s.locateNow(s.env.bg.ctx, name)
			s.mu.Lock()
			delete(s.locating, name) // the next caller asks afresh
			s.mu.Unlock()
			close(c.done)
		})
		if !started {
			s.mu.Lock()
			delete(s.locating, name)
			s.mu.Unlock()
			c.err = errShutDown
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
func (s *session) locateNow(ctx context.Context, name string) (remote.PackageInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, s.env.connectTimeout)
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
func (s *session) answersFor(name string, info remote.PackageInfo) bool {
	for _, p := range s.spec.Packages {
		if p == name {
			return true
		}
	}
	site := filepath.Base(info.Site)
	return site == "site-packages" || site == "dist-packages"
}

func (s *session) mirror(ctx context.Context, info remote.PackageInfo, prog Progress) (*remote.MirrorTree, error) {
	prog.Report(fmt.Sprintf("mirroring %s %s (%d files)", info.Name, info.Version, info.FilesCount), 0)
	s.env.status(s.spec.Name, info.Version, "indexing", "mirroring")
	var last int
	m, err := remote.MirrorWith(ctx, s.target, s.spec, info, s.env.cacheDir, remote.MirrorOptions{
		Limits: s.env.mirrorLimits,
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
		s.env.notify.LogMessage(ctx, MessageWarning, fmt.Sprintf("torchlsp: %s %s on %s: %d file(s) not mirrored, so not indexed: %s",
			info.Name, info.Version, s.spec.Name, len(skipped), strings.Join(names, ", ")))
	}
	return m, nil
}

func (s *session) openIndex(ps *pkgState) error {
	cacheFile := filepath.Join(ps.mirror.Root, "index.bin")
	ix, err := pyindex.Open(ps.mirror.SiteDir, cacheFile, pyindex.WithParseBudget(s.env.bg.parses))
	if err != nil {
		return fmt.Errorf("index %s: %w", ps.name, err)
	}
	ps.index = ix
	s.env.bg.Go(func() {
		if err := ix.Build(s.env.bg.ctx); err != nil && s.env.bg.ctx.Err() == nil {
			s.env.notify.LogMessage(s.env.bg.ctx, MessageWarning, fmt.Sprintf("index %s: %v", ps.name, err))
		}
		if n := ix.Stats().Truncated; n > 0 {
			s.env.notify.LogMessage(s.env.bg.ctx, MessageWarning, fmt.Sprintf(
				"index %s on %s: %d files hold more names than the index keeps (%d a file, %d in all); the names past that are looked up on the target",
				ps.name, s.spec.Name, n, pyindex.MaxNamesPerFile, pyindex.MaxNamesPerIndex))
		}
	})
	return nil
}

// revalidate compares a cached mirror with what the target has now and
// mirrors again when the version moved.
func (s *session) revalidate(ctx context.Context, ps *pkgState) {
	info, err := s.locate(ctx, ps.name)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrNotOnTarget) {
			// Answers still come from the cache, but the user must see why
			// the target is not reached (a changed host key, a host
			// down), once per failure, with the fix the error names.
			msg := fmt.Sprintf("torchlsp: target %s: answering from the cached mirror of %s %s, because the target cannot be reached: %v", s.spec.Name, ps.name, ps.info.Version, err)
			if s.noteFailure(err.Error()) {
				s.env.notify.ShowMessage(ctx, MessageWarning, msg)
			}
			s.env.status(s.spec.Name, ps.info.Version, "ready", "cached mirror; the target cannot be reached: "+err.Error())
		}
		return
	}
	if sameInstall(info, ps.info) {
		ps.confirmed.Store(true)
		return
	}
	s.env.notify.ShowMessage(ctx, MessageInfo, fmt.Sprintf("torchlsp: %s on %s changed from %s to %s; mirroring again", ps.name, s.spec.Name, ps.info.Version, info.Version))
	// Queries keep using the old mirror until the new one is ready.
	next := &pkgState{name: ps.name, fresh: true, done: make(chan struct{})}
	s.env.bg.Go(func() {
		defer close(next.done)
		next.err = s.load(ctx, next)
		if next.err != nil {
			if ctx.Err() == nil {
				s.env.notify.ShowMessage(ctx, MessageError, fmt.Sprintf("torchlsp: target %s: %v", s.spec.Name, next.err))
			}
			return
		}
		s.mu.Lock()
		if s.pkgs[ps.name] == ps {
			s.pkgs[ps.name] = next
		}
		s.mu.Unlock()
		s.env.packagesChanged(s.spec.Name)
	})
}

// loadedPackages returns the packages whose mirror is in use, without
// waiting for any that is still loading.
func (s *session) loadedPackages() []*pkgState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pkgState
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

// topPackage returns the first component of a dotted name.
func topPackage(qualname string) string {
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
func (s *session) importing(ctx context.Context, pkg string, call func() error) error {
	s.mu.Lock()
	done := s.imported[pkg]
	s.mu.Unlock()
	if done {
		return call()
	}
	prog := s.env.notify.StartProgress(ctx, fmt.Sprintf("torchlsp: importing %s on %s", pkg, s.spec.Name), false)
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
