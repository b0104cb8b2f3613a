package server

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/session"
)

// A server started inside torchlsp's cache (a client that roots a project
// at the mirror it jumped into, or opens a mirror's file with no
// workspace folder) serves the target whose mirror it is, as the
// workspace's server does. The target is the configured one (user
// settings, a trusted torchlsp.toml, the editor's settings) whose cache
// directory it is (its name and identity) and whose name and identity the
// manifest records; its session answers for the mirror's package from
// that very mirror. Such a server builds no site view and loads nothing
// eagerly, so it makes no second mirror or site. What the manifest says
// is a label, never a command: for a target not configured here the
// server says so and answers from a read-only session over the mirrors in
// the cache alone.

// homeState is the part of the cache a server was started in.
type homeState struct {
	mu       sync.Mutex // guards the fields below
	path     string     // the root or first document that placed the server in the cache; "" when it is not there
	target   string     // the configured target serving it; "" for none
	pinned   *session.Session
	readOnly *session.Session // the session of a target not configured here
}

// inCache reports whether the server was started inside the cache.
func (h *homeState) inCache() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.path != ""
}

// readOnlySession is the read-only session serving the server's part of
// the cache, for the default target (name "") or its own name; nil
// otherwise.
func (h *homeState) readOnlySession(name string) *session.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.readOnly == nil || (name != "" && name != h.readOnly.Spec().Name) {
		return nil
	}
	return h.readOnly
}

// placeHome records the path a server was started at (its root or, with
// no workspace folder, its first document) when it lies in the cache, and
// decides what serves it.
func (e *Engine) placeHome(ctx context.Context, path string) {
	if _, ok := remote.PlaceInCache(e.opts.Dirs.Cache, path); !ok {
		return
	}
	e.home.mu.Lock()
	placed := e.home.path != ""
	if !placed {
		e.home.path = path
	}
	e.home.mu.Unlock()
	if !placed {
		e.settleHome(ctx)
	}
}

// settleHome decides, again after every change of configuration, which
// target serves a server started in the cache.
func (e *Engine) settleHome(ctx context.Context) {
	e.home.mu.Lock()
	path := e.home.path
	e.home.mu.Unlock()
	place, ok := remote.PlaceInCache(e.opts.Dirs.Cache, path)
	if path == "" || !ok {
		return
	}
	var m *remote.MirrorTree
	what := "a part of torchlsp's cache"
	if place.Root != "" {
		if st, err := os.Stat(place.Root); err == nil && st.IsDir() {
			if mt, err := remote.OpenMirror(place.Root); err == nil {
				m = mt
				what = fmt.Sprintf("torchlsp's mirror of %s %s", m.Manifest.Package, m.Manifest.Version)
			} else {
				what = "a mirror torchlsp has not completed"
			}
		}
	}
	if name, ok := e.configuredFor(place, m); ok {
		e.serveHome(ctx, path, what, name, m)
		return
	}
	label := place.Target
	if m != nil && m.Manifest.Target != "" {
		label = m.Manifest.Target
	}
	e.home.mu.Lock()
	old := e.home.readOnly
	same := old != nil && e.home.target == "" && old.Spec().Name == label
	e.home.mu.Unlock()
	if same {
		return
	}
	s := session.NewReadOnly(sessionEnv{e}, e.sessionOptions(), remote.Spec{Name: label}, place.TargetDir)
	if m != nil {
		if err := s.Pin(m); err != nil {
			e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
		}
	}
	e.home.mu.Lock()
	e.home.target, e.home.pinned, e.home.readOnly = "", nil, s
	e.home.mu.Unlock()
	e.cfg.setHome("")
	if old != nil {
		_ = old.Close()
	}
	e.notify.ShowMessage(ctx, MessageWarning, fmt.Sprintf(
		"torchlsp: %s is in %s of target %q, which is not configured here (user settings or a trusted torchlsp.toml): answers come from its mirrors in the cache alone, and nothing runs on it",
		path, what, label))
}

// serveHome makes a configured target serve a server started in its
// mirror m (nil when the place is no complete mirror).
func (e *Engine) serveHome(ctx context.Context, path, what, name string, m *remote.MirrorTree) {
	e.cfg.setHome(name)
	s, err := e.session(name)
	if err != nil {
		e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
		return
	}
	e.home.mu.Lock()
	old, changed := e.home.readOnly, e.home.target != name || e.home.pinned != s
	e.home.target, e.home.pinned, e.home.readOnly = name, s, nil
	e.home.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	if !changed {
		return
	}
	if m != nil {
		if err := s.Pin(m); err != nil {
			e.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
			return
		}
	}
	e.notify.LogMessage(ctx, MessageInfo, fmt.Sprintf("torchlsp: %s is in %s of target %s: answering for that target", path, what, name))
}

// configuredFor finds the configured target whose cache directory the
// place is, and whose name and identity the mirror's manifest, if any,
// records.
func (e *Engine) configuredFor(place remote.CachePlace, m *remote.MirrorTree) (string, bool) {
	names, _ := e.cfg.targets()
	for _, name := range names {
		spec, err := e.cfg.spec(name)
		if err != nil || !place.Of(spec) {
			continue
		}
		if m != nil && (m.Manifest.Target != spec.Name || m.Manifest.Identity != remote.TargetIdentity(spec)) {
			continue
		}
		return name, true
	}
	return "", false
}

// closeHome ends the read-only session, if any.
func (e *Engine) closeHome() error {
	e.home.mu.Lock()
	s := e.home.readOnly
	e.home.readOnly = nil
	e.home.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}
