package server

import (
	"context"
	"sync"
)

// notifierBox lets the notifier be replaced (the LSP adapter sets it once
// the connection exists) while background work uses it.
type notifierBox struct {
	mu sync.RWMutex // guards n
	n  Notifier
}

var _ Notifier = (*notifierBox)(nil)

func (b *notifierBox) set(n Notifier) {
	if n == nil {
		n = NopNotifier{}
	}
	b.mu.Lock()
	b.n = n
	b.mu.Unlock()
}

func (b *notifierBox) get() Notifier {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.n
}

func (b *notifierBox) ShowMessage(ctx context.Context, typ MessageType, msg string) {
	b.get().ShowMessage(ctx, typ, msg)
}

func (b *notifierBox) LogMessage(ctx context.Context, typ MessageType, msg string) {
	b.get().LogMessage(ctx, typ, msg)
}

func (b *notifierBox) StartProgress(ctx context.Context, title string, cancellable bool) Progress {
	return b.get().StartProgress(ctx, title, cancellable)
}

func (b *notifierBox) Status(ctx context.Context, s Status) { b.get().Status(ctx, s) }

func (b *notifierBox) PublishDiagnostics(ctx context.Context, doc *Snapshot, diags []Diagnostic) error {
	return b.get().PublishDiagnostics(ctx, doc, diags)
}

func (b *notifierBox) ShowDocument(ctx context.Context, loc Location, takeFocus bool) (bool, error) {
	return b.get().ShowDocument(ctx, loc, takeFocus)
}

func (b *notifierBox) Site(ctx context.Context, s SiteInfo) { b.get().Site(ctx, s) }

func (b *notifierBox) Confirm(ctx context.Context, question, yes string) (bool, error) {
	return b.get().Confirm(ctx, question, yes)
}

func (b *notifierBox) Capabilities() Capabilities { return b.get().Capabilities() }
