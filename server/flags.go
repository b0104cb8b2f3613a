package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/gates"
)

// catalogState is the config-flag catalog of one mirrored torch, built on
// first use and cached next to the mirror.
type catalogState struct {
	once sync.Once
	cat  *gates.Catalog
	err  error
}

// errCatalog marks a failure to build the flag catalog, as opposed to a
// failure to reach the target: the former leaves other answers possible.
var errCatalog = errors.New("config flag catalog")

// effectiveState caches a config module's values as the target's torch
// computes them (env overrides included). Asking means importing torch on
// the target, which takes seconds, so it happens once per module, in the
// background.
type effectiveState struct {
	done chan struct{}
	cfg  remote.Config
	err  error
}

// catalog returns the flag catalog of the target's torch.
func (s *session) catalog(ctx context.Context) (*gates.Catalog, *pkgState, error) {
	ps, err := s.pkg(ctx, "torch")
	if err != nil {
		return nil, nil, err
	}
	ps.gates.once.Do(func() {
		cache := filepath.Join(ps.mirror.Root, "gates.bin")
		ps.gates.cat, ps.gates.err = gates.Open(s.env.bg.ctx, ps.mirror.SiteDir, cache, gates.Options{Budget: s.env.bg.parses})
		if ps.gates.err != nil {
			ps.gates.err = fmt.Errorf("%w: %w", errCatalog, ps.gates.err)
		}
	})
	return ps.gates.cat, ps, ps.gates.err
}

// effective returns the target's value of a flag, waiting at most wait for
// the target to import its config module.
func (s *session) effective(ctx context.Context, f *gates.Flag, wait time.Duration) (remote.ConfigValue, bool, error) {
	s.mu.Lock()
	st, ok := s.effectiveVals[f.Module]
	if !ok {
		st = &effectiveState{done: make(chan struct{})}
		s.effectiveVals[f.Module] = st
		started := s.env.bg.Go(func() {
			ctx, cancel := context.WithTimeout(s.env.bg.ctx, s.env.inspectTimeout)
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
			st.err = errShutDown
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
	v, ok := st.cfg.Values[f.Key]
	return v, ok, nil
}

// flagTarget is what hover and definition know about a config flag.
type flagTarget struct {
	flag    *gates.Flag
	cat     *gates.Catalog
	pkg     *pkgState
	spec    remote.Spec
	value   *remote.ConfigValue // the target's effective value, when known
	pending bool                // the target is still being asked
	valErr  error
}

// renderFlagHover writes a config flag's hover: its definition, what the
// target computes for it, the env vars that set it, and every place torch
// reads it.
func renderFlagHover(ft *flagTarget) string {
	f := ft.flag
	var b strings.Builder
	b.WriteString("```python\n")
	typ := ""
	if f.Type != "" {
		typ = ": " + f.Type
	}
	fmt.Fprintf(&b, "%s%s = %s\n", f.Key, typ, oneLineShort(f.Default, 160))
	b.WriteString("```\n")
	fmt.Fprintf(&b, "`%s` · config flag of %s %s\n\n", f.FullKey(), ft.pkg.info.Name, ft.pkg.info.Version)
	if f.Doc != "" {
		b.WriteString(strings.TrimSpace(f.Doc))
		b.WriteString("\n\n")
	}
	switch {
	case ft.value != nil:
		fmt.Fprintf(&b, "On target **%s**: `%s`", ft.spec.Name, ft.value.Repr)
		if ft.value.DefaultRepr != "" && ft.value.DefaultRepr != ft.value.Repr {
			fmt.Fprintf(&b, " (default `%s`)", ft.value.DefaultRepr)
		}
		b.WriteString("  \n")
	case ft.pending:
		fmt.Fprintf(&b, "On target **%s**: being read (torch is importing there); hover again in a moment  \n", ft.spec.Name)
	case ft.valErr != nil:
		fmt.Fprintf(&b, "On target **%s**: could not be read: %v  \n", ft.spec.Name, ft.valErr)
	}
	if env := f.Env(); len(env) > 0 {
		parts := make([]string, 0, len(env))
		for _, v := range f.EnvForce {
			parts = append(parts, "`"+v+"` (forces the value)")
		}
		for _, v := range f.EnvDefault {
			parts = append(parts, "`"+v+"` (sets the default, read once when torch is imported)")
		}
		fmt.Fprintf(&b, "Environment: %s  \n", strings.Join(parts, ", "))
	}
	if f.Alias != "" {
		fmt.Fprintf(&b, "Alias of `%s`  \n", f.Alias)
	}
	if f.Justknob != "" {
		fmt.Fprintf(&b, "JustKnob `%s`  \n", f.Justknob)
	}
	sites := ft.cat.Sites(f.FullKey())
	if len(sites) > 0 {
		fmt.Fprintf(&b, "\nRead at %d place%s in torch:\n", len(sites), plural(len(sites)))
		const maxSites = 12
		for i, st := range sites {
			if i == maxSites {
				fmt.Fprintf(&b, "- … and %d more (Find References lists them all)\n", len(sites)-maxSites)
				break
			}
			local := filepath.Join(ft.pkg.mirror.SiteDir, filepath.FromSlash(st.File))
			u := url.URL{Scheme: "file", Path: local, Fragment: fmt.Sprintf("L%d", st.Line+1)}
			fmt.Fprintf(&b, "- [`%s:%d`](%s) `%s`\n", st.File, st.Line+1, u.String(), oneLineShort(st.Text, 100))
		}
	}
	def := ft.pkg.mirror.TargetPath(filepath.Join(ft.pkg.mirror.SiteDir, filepath.FromSlash(f.File)))
	fmt.Fprintf(&b, "\n---\nDefined at `%s:%d` on target **%s**\n", def, f.Line+1, ft.spec.Name)
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func oneLineShort(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Gates prints a config flag's definition and every place the target's
// torch reads it (`torchlsp gates FLAG`).
func (e *Engine) Gates(ctx context.Context, target, key string, w io.Writer) error {
	s, err := e.session(target)
	if err != nil {
		return err
	}
	cat, ps, err := s.catalog(ctx)
	if err != nil {
		return err
	}
	if !cat.HasCompile && len(cat.Modules) == 0 {
		return fmt.Errorf("torch %s on target %s has no config modules (it predates torch.compile)", ps.info.Version, s.spec.Name)
	}
	fmt.Fprintf(w, "# torch %s on target %s; paths are relative to %s\n", ps.info.Version, s.spec.Name, ps.info.Site)
	return gates.FormatGates(w, cat, key)
}
