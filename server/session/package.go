package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/opimpl"
	"github.com/torchlsp/torchlsp/server/pyindex"
)

// Package is one package of one target: its mirror (or on-demand tree),
// its index, and what is built from them once per mirror (the flag
// catalog, the compiled-op table, the lookup cache). A new mirror is a new
// Package, so nothing built from the old one outlives it. done closes when
// loading ended, successfully or not; the accessors are for a Package that
// loaded.
type Package struct {
	name  string
	opts  *Options // the session's
	fresh bool     // skip the cached mirror: the target was seen to differ from it
	// partial marks an on-demand tree (ondemand.go): what needs the
	// whole tree (op table, flag catalog, site view) is not taken from
	// it.
	partial bool
	done    chan struct{}
	err     error
	info    remote.PackageInfo
	mirror  *remote.MirrorTree
	index   *pyindex.Index
	gates   catalogState
	impls   implState // compiled-op registrations, scanned once per mirror
	// lookups caches resolved names; it lives and dies with this mirror.
	lookups lookupCache
	// confirmed is set once the target said this mirror is its current
	// install (a fresh mirror, or a cached one revalidated); until then a
	// cached mirror may be of a version the target has since replaced.
	confirmed atomic.Bool
}

// Name is the package's top-level name.
func (p *Package) Name() string { return p.name }

// Info is what the target said about the package.
func (p *Package) Info() remote.PackageInfo { return p.info }

// Mirror is where its sources are, here and on the target. For an
// on-demand tree only the files read are there.
func (p *Package) Mirror() *remote.MirrorTree { return p.mirror }

// Index is its index of definitions.
func (p *Package) Index() *pyindex.Index { return p.index }

// Confirmed says the target said this mirror is its current install.
func (p *Package) Confirmed() bool { return p.confirmed.Load() }

// Partial reports whether the package answers from an on-demand tree:
// what needs the whole tree is not to be taken from it.
func (p *Package) Partial() bool { return p.partial }

// Cached reports whether the lookup cache holds a name's definition.
func (p *Package) Cached(qualname string) bool {
	_, ok := p.lookups.get(qualname)
	return ok
}

// catalogState is the config-flag catalog of one mirrored torch, built on
// first use and cached next to the mirror.
type catalogState struct {
	once sync.Once
	cat  *gates.Catalog
	err  error
}

// ErrCatalog marks a failure to build the flag catalog, as opposed to a
// failure to reach the target: the former leaves other answers possible.
var ErrCatalog = errors.New("config flag catalog")

// Catalog returns the flag catalog of the target's torch, waiting for its
// complete mirror.
func (s *Session) Catalog(ctx context.Context) (*gates.Catalog, *Package, error) {
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		return nil, nil, err
	}
	ps.gates.once.Do(func() {
		cache := filepath.Join(ps.mirror.Root, "gates.bin")
		ps.gates.cat, ps.gates.err = gates.Open(s.opts.Work.Context(), ps.mirror.SiteDir, cache, gates.Options{Budget: s.opts.Parses})
		if ps.gates.err != nil {
			ps.gates.err = fmt.Errorf("%w: %w", ErrCatalog, ps.gates.err)
		}
	})
	return ps.gates.cat, ps, ps.gates.err
}

// implState is the compiled-op table of one mirrored torch: where it
// registers each op's meta function, decompositions and lowerings. It is
// scanned on first use, in the background, and cached next to the mirror.
type implState struct {
	once sync.Once
	done chan struct{} // closed when tab or err is set
	tab  *opimpl.Table
	err  error
}

// startOpTable starts building the package's op table in the background,
// once per mirror; the session calls it as soon as torch's mirror is
// usable, so that a hover rarely waits for it.
func (p *Package) startOpTable() {
	opts := p.opts
	st := &p.impls
	st.once.Do(func() {
		st.done = make(chan struct{})
		started := opts.Work.Go(func() {
			defer close(st.done)
			cache := filepath.Join(p.mirror.Root, "opimpl.bin")
			st.tab, st.err = opimpl.Open(opts.Work.Context(), p.mirror.SiteDir, cache, opts.Parses)
			if st.err != nil {
				st.err = fmt.Errorf("compiled-op table of %s %s: %w", p.name, p.info.Version, st.err)
			}
		})
		if !started {
			st.err = ErrShutDown
			close(st.done)
		}
	})
}

// OpTable returns the compiled-op table of a complete mirror of torch,
// waiting for its first scan as long as ctx allows.
func (p *Package) OpTable(ctx context.Context) (*opimpl.Table, error) {
	if p.partial {
		return nil, fmt.Errorf("compiled-op table of %s: the on-demand tree is not the whole package", p.name)
	}
	p.startOpTable()
	st := &p.impls
	select {
	case <-st.done:
		return st.tab, st.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// effectiveState caches a config module's values as the target's torch
// computes them (env overrides included). Asking means importing torch on
// the target, which takes seconds, so it happens once per module, in the
// background.
type effectiveState struct {
	done chan struct{}
	cfg  remote.Config
	err  error
}

// FlagValue returns the target's value of a flag, waiting at most wait for
// the target to import its config module; ok is false while it is not
// known.
func (s *Session) FlagValue(ctx context.Context, f *gates.Flag, wait time.Duration) (v remote.ConfigValue, ok bool, err error) {
	if s.ReadOnly() {
		return remote.ConfigValue{}, false, fmt.Errorf("target %q is not configured here: its values are not read", s.spec.Name)
	}
	s.mu.Lock()
	st, ok := s.effectiveVals[f.Module]
	if !ok {
		st = &effectiveState{done: make(chan struct{})}
		s.effectiveVals[f.Module] = st
		started := s.opts.Work.Go(func() {
			ctx, cancel := context.WithTimeout(s.opts.Work.Context(), s.opts.InspectTimeout)
			defer cancel()
			published := false
			err := s.importing(ctx, "torch", func() error {
				cfg, err := s.client.EvalConfig(ctx, f.Module)
				if err == nil {
					// Known before the import's progress ends: a hover
					// that follows that end sees the value.
					st.cfg, published = cfg, true
					close(st.done)
				}
				return err
			})
			if published {
				return
			}
			st.err = err
			s.mu.Lock()
			delete(s.effectiveVals, f.Module) // ask again next time
			s.mu.Unlock()
			close(st.done)
		})
		if !started {
			st.err = ErrShutDown
			close(st.done)
		}
	}
	s.mu.Unlock()
	select {
	case <-st.done: // known already: never lose it to a zero wait
	default:
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-st.done:
		case <-timer.C:
			return remote.ConfigValue{}, false, nil
		case <-ctx.Done():
			return remote.ConfigValue{}, false, ctx.Err()
		}
	}
	if st.err != nil {
		return remote.ConfigValue{}, false, st.err
	}
	v, ok = st.cfg.Values[f.Key]
	return v, ok, nil
}
