package server

import (
	"context"
	"sync"
)

// statusBoard keeps every target's last state and shows the default
// target's on the front end's status item, once per change. Other targets
// (a repro on every target) report through progress.
type statusBoard struct {
	ctx       context.Context // the engine's lifetime
	notify    Notifier
	isDefault func(target string) bool
	// becameReady is called when the default target turns ready from any
	// other state (a new torch mirrored, the connection back).
	becameReady func()

	mu    sync.Mutex // guards last and shown
	last  map[string]Status
	shown Status // what the status item shows now
}

// report records a target's state and shows it if it is the default's and
// it changed. An empty version keeps the one known.
func (b *statusBoard) report(target, version, state, msg string) {
	st := Status{Target: target, TorchVersion: version, State: state, Message: msg}
	b.mu.Lock()
	if version == "" {
		st.TorchVersion = b.last[target].TorchVersion
	}
	prev, known := b.last[target]
	b.last[target] = st
	b.mu.Unlock()
	if !b.isDefault(target) {
		return
	}
	b.show(st)
	if st.State == "ready" && (!known || prev.State != "ready" || prev.TorchVersion != st.TorchVersion) && b.becameReady != nil {
		b.becameReady()
	}
}

// defaultChanged shows the new default target's last known state, or
// "connecting" when it has none yet.
func (b *statusBoard) defaultChanged(target string) {
	b.mu.Lock()
	st, ok := b.last[target]
	b.mu.Unlock()
	if !ok {
		st = Status{Target: target, State: "connecting"}
	}
	b.show(st)
}

func (b *statusBoard) show(st Status) {
	if !b.notify.Capabilities().Status {
		return
	}
	b.mu.Lock()
	if b.shown == st {
		b.mu.Unlock()
		return
	}
	b.shown = st
	b.mu.Unlock()
	b.notify.Status(b.ctx, st)
}
