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

// homeState is the part of the cache a server was started in, and what
// it needs to decide who serves it.
type homeState struct {
	cache   string // torchlsp's cache
	cfg     *workspaceConfig
	notify  Notifier
	session func(name string) (*session.Session, error)
	// readOnly makes the session of a target not configured here over its
	// directory in the cache.
	newReadOnly func(spec remote.Spec, dir string) *session.Session

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

// place records the path a server was started at (its root or, with
// no workspace folder, its first document) when it lies in the cache, and
// decides what serves it.
func (h *homeState) place(ctx context.Context, path string) {
	if _, ok := remote.PlaceInCache(h.cache, path); !ok {
		return
	}
	h.mu.Lock()
	placed := h.path != ""
	if !placed {
		h.path = path
	}
	h.mu.Unlock()
	if !placed {
		h.settle(ctx)
	}
}

// settle decides, again after every change of configuration, which
// target serves a server started in the cache.
func (h *homeState) settle(ctx context.Context) {
	h.mu.Lock()
	path := h.path
	h.mu.Unlock()
	place, ok := remote.PlaceInCache(h.cache, path)
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
	if name, ok := h.configuredFor(place, m); ok {
		h.serve(ctx, path, what, name, m)
		return
	}
	label := place.Target
	if m != nil && m.Manifest.Target != "" {
		label = m.Manifest.Target
	}
	h.mu.Lock()
	old := h.readOnly
	same := old != nil && h.target == "" && old.Spec().Name == label
	h.mu.Unlock()
	if same {
		return
	}
	s := h.newReadOnly(remote.Spec{Name: label}, place.TargetDir)
	if m != nil {
		if err := s.Pin(m); err != nil {
			h.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
		}
	}
	h.mu.Lock()
	h.target, h.pinned, h.readOnly = "", nil, s
	h.mu.Unlock()
	h.cfg.setHome("")
	if old != nil {
		_ = old.Close()
	}
	h.notify.ShowMessage(ctx, MessageWarning, fmt.Sprintf(
		"torchlsp: %s is in %s of target %q, which is not configured here (user settings or a trusted torchlsp.toml): answers come from its mirrors in the cache alone, and nothing runs on it",
		path, what, label))
}

// serve makes a configured target serve a server started in its
// mirror m (nil when the place is no complete mirror).
func (h *homeState) serve(ctx context.Context, path, what, name string, m *remote.MirrorTree) {
	h.cfg.setHome(name)
	s, err := h.session(name)
	if err != nil {
		h.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
		return
	}
	h.mu.Lock()
	old, changed := h.readOnly, h.target != name || h.pinned != s
	h.target, h.pinned, h.readOnly = name, s, nil
	h.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	if !changed {
		return
	}
	if m != nil {
		if err := s.Pin(m); err != nil {
			h.notify.ShowMessage(ctx, MessageError, "torchlsp: "+err.Error())
			return
		}
	}
	h.notify.LogMessage(ctx, MessageInfo, fmt.Sprintf("torchlsp: %s is in %s of target %s: answering for that target", path, what, name))
}

// configuredFor finds the configured target whose cache directory the
// place is, and whose name and identity the mirror's manifest, if any,
// records.
func (h *homeState) configuredFor(place remote.CachePlace, m *remote.MirrorTree) (string, bool) {
	names, _ := h.cfg.targets()
	for _, name := range names {
		spec, err := h.cfg.spec(name)
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

// close ends the read-only session, if any.
func (h *homeState) close() error {
	h.mu.Lock()
	s := h.readOnly
	h.readOnly = nil
	h.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}
