package server

import (
	"context"
	"sync"
	"testing"
	"time"
)

// statusNotes records the status items shown.
type statusNotes struct {
	NopNotifier
	shown []Status
}

func (n *statusNotes) Capabilities() Capabilities         { return Capabilities{Status: true} }
func (n *statusNotes) Status(_ context.Context, s Status) { n.shown = append(n.shown, s) }

// The status item shows the default target's state once per change, and
// the open documents are checked again whenever the default target turns
// ready from another state or with another torch: a new mirror, the
// connection back.
func TestStatusBoard(t *testing.T) {
	t.Parallel()
	n := &statusNotes{}
	ready := 0
	def := "gpu"
	b := &statusBoard{ctx: context.Background(), notify: n, last: map[string]Status{},
		isDefault: func(target string) bool { return target == def }, becameReady: func() { ready++ }}
	steps := []struct {
		target, version, state string
		wantShown, wantReady   int
	}{
		{"gpu", "", "connecting", 1, 0},
		{"gpu", "2.11", "ready", 2, 1},
		{"gpu", "", "ready", 2, 1},       // nothing changed
		{"other", "1.13", "ready", 2, 1}, // not the default: progress only
		{"gpu", "", "error", 3, 1},       // connection lost
		{"gpu", "", "ready", 4, 2},       // back: check again
		{"gpu", "2.12", "ready", 5, 3},   // another torch mirrored
		{"gpu", "", "indexing", 6, 3},    // keeps the version
	}
	for i, st := range steps {
		b.report(st.target, st.version, st.state, "")
		if len(n.shown) != st.wantShown || ready != st.wantReady {
			t.Fatalf("step %d %+v: shown %d, ready %d; want %d, %d (%+v)", i, st, len(n.shown), ready, st.wantShown, st.wantReady, n.shown)
		}
	}
	if last := n.shown[len(n.shown)-1]; last.TorchVersion != "2.12" {
		t.Errorf("last status %+v lost the torch version", last)
	}
	def = "other"
	b.defaultChanged("other")
	if last := n.shown[len(n.shown)-1]; last.Target != "other" || last.State != "ready" || last.TorchVersion != "1.13" {
		t.Errorf("after the default changed: %+v, want other's last state", last)
	}
}

// A switch of the default target that lands between the check that a
// target is the default and the send of its state must not leave the old
// target's state on the status item: editors take the active target from
// it (and hand that target's site to their Python server).
func TestStatusSwitchRacingAReport(t *testing.T) {
	t.Parallel()
	n := &statusNotes{}
	var mu sync.Mutex // guards def
	def := "old"
	switched := make(chan struct{})
	var b *statusBoard
	b = &statusBoard{ctx: context.Background(), notify: n, last: map[string]Status{},
		isDefault: func(target string) bool {
			mu.Lock()
			first := target == "old" && def == "old"
			if first {
				def = "new"
			}
			mu.Unlock()
			if first {
				// The switch lands right after this check said "old".
				// Where check and send are one step the switch waits for
				// the send, so this wait ends by its bound, not the event.
				go func() { b.defaultChanged("new"); close(switched) }()
				select {
				case <-switched:
				case <-time.After(time.Second):
				}
				return true
			}
			mu.Lock()
			defer mu.Unlock()
			return target == def
		}}
	b.report("old", "2.11", "ready", "")
	<-switched
	if len(n.shown) == 0 {
		t.Fatal("nothing shown")
	}
	if last := n.shown[len(n.shown)-1]; last.Target != "new" {
		t.Errorf("after the switch the status item shows %+v; want target new (shown: %+v)", last, n.shown)
	}
}
