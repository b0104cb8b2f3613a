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

	// sendMu is held from the check that a target is the default to the
	// send of its state, so that a report racing a switch of the default
	// can never be shown after the new default's state.
	sendMu sync.Mutex
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
	if !b.showLatest(target) {
		return
	}
	if st.State == "ready" && (!known || prev.State != "ready" || prev.TorchVersion != st.TorchVersion) && b.becameReady != nil {
		b.becameReady()
	}
}

// defaultChanged shows the new default target's last known state, or
// "connecting" when it has none yet.
func (b *statusBoard) defaultChanged(target string) { b.showLatest(target) }

// showLatest shows a target's latest state if the target is the default
// at the moment of sending, and reports whether it is. The state is read
// at that moment too, so a slower caller never shows an older one.
func (b *statusBoard) showLatest(target string) bool {
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	if !b.isDefault(target) {
		return false
	}
	if !b.notify.Capabilities().Status {
		return true
	}
	b.mu.Lock()
	st, ok := b.last[target]
	if !ok {
		st = Status{Target: target, State: "connecting"}
	}
	if b.shown == st {
		b.mu.Unlock()
		return true
	}
	b.shown = st
	b.mu.Unlock()
	b.notify.Status(b.ctx, st)
	return true
}
