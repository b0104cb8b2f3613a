package server

import (
	"context"
	"sync"
)

// statusBoard tells the front end the default target's state, once per
// change. Other targets (a repro on every target) report through progress.
type statusBoard struct {
	ctx       context.Context // the engine's lifetime
	notify    Notifier
	isDefault func(target string) bool

	mu   sync.Mutex // guards last
	last map[string]Status
}

// report records a target's state and shows it if it changed.
func (b *statusBoard) report(target, version, state, msg string) {
	if !b.notify.Capabilities().Status || !b.isDefault(target) {
		return
	}
	st := Status{Target: target, TorchVersion: version, State: state, Message: msg}
	b.mu.Lock()
	prev := b.last[target]
	if version == "" {
		st.TorchVersion = prev.TorchVersion
	}
	if prev == st {
		b.mu.Unlock()
		return
	}
	b.last[target] = st
	b.mu.Unlock()
	b.notify.Status(b.ctx, st)
}

// forget drops what was shown for a target, so its next state is shown
// even when equal (the default target changed back to it).
func (b *statusBoard) forget(target string) {
	b.mu.Lock()
	delete(b.last, target)
	b.mu.Unlock()
}
