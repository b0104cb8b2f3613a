package session

import (
	"fmt"

	"github.com/torchlsp/torchlsp/remote"
)

// A read-only session answers from the mirrors a target left in the
// cache, and reaches no target: a server started inside the mirror of a
// target that is not configured there navigates it (definition,
// references, symbols, hover from the index) and runs nothing. Names the
// index cannot settle get no answer; packages without a mirror in the
// cache are not the session's.

// NewReadOnly makes the read-only session of the mirrors in a target's
// cache directory (<cache>/<target>/<identity>); spec.Name labels it in
// what it reports, and nothing else of spec is used.
func NewReadOnly(env Env, opts Options, spec remote.Spec, targetDir string) *Session {
	s := New(env, opts, spec, remote.Unconfigured{
		Label:  spec.Name,
		Reason: "not configured here (user settings or a trusted torchlsp.toml), so nothing runs on it; answers come from its mirrors in the cache",
	})
	s.readOnlyDir = targetDir
	return s
}

// ReadOnly reports whether the session reaches no target.
func (s *Session) ReadOnly() bool { return s.readOnlyDir != "" }

// Pin makes a complete mirror the source of its package's answers: a
// server started inside a mirror answers from that one. A session that
// reaches its target checks the mirror there in the background, as it
// does any cached mirror, and follows a changed install.
func (s *Session) Pin(m *remote.MirrorTree) error {
	name := m.Manifest.Package
	ps := &Package{name: name, opts: &s.opts, done: make(chan struct{})}
	ps.err = s.use(ps, m, infoOf(m))
	close(ps.done)
	if ps.err != nil {
		return fmt.Errorf("mirror %s: %w", m.Root, ps.err)
	}
	s.mu.Lock()
	s.pkgs[name] = ps
	s.mu.Unlock()
	if !s.ReadOnly() {
		s.opts.Work.Go(func() { s.revalidate(s.opts.Work.Context(), ps) })
	}
	return nil
}

// loadReadOnly makes a package of a read-only session usable from the
// newest complete mirror of it in the cache.
func (s *Session) loadReadOnly(ps *Package) error {
	m, err := remote.LookupMirrorIn(s.readOnlyDir, ps.name)
	if err != nil {
		return fmt.Errorf("%s: no mirror of it in the cache, and target %q is not configured here: %w", ps.name, s.spec.Name, ErrNotOnTarget)
	}
	return s.use(ps, m, infoOf(m))
}
