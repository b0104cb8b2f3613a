package pyindex

import "sync"

// parseBudget bounds the source parsed at once: the C memory of a parse
// grows with its text (about 30 bytes per byte of Python), so four workers
// each on a megabyte-sized file would hold four such trees together. A
// text larger than the budget parses alone.
const parseBudget = 768 << 10

// byteBudget admits work by weight: the weights admitted at once sum to
// at most limit, and a weight over limit counts as limit. Waiting takes
// no context: what it waits for is a parse, which ends on its own.
type byteBudget struct {
	limit int64
	mu    sync.Mutex // guards inUse and the waits on free
	free  *sync.Cond // signalled when weight is released
	inUse int64
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: max(limit, 1)}
	b.free = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n fits and takes it; it returns the weight taken,
// to hand to release.
func (b *byteBudget) acquire(n int64) int64 {
	w := min(max(n, 0), b.limit)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.inUse+w > b.limit {
		b.free.Wait()
	}
	b.inUse += w
	return w
}

func (b *byteBudget) release(w int64) {
	b.mu.Lock()
	b.inUse -= w
	b.mu.Unlock()
	b.free.Broadcast()
}
