package syntax

import "sync"

// DefaultBudget is the source a process parses at once when its parses
// share one Budget: the C memory of a parse grows with its text (about 30
// bytes per byte of Python), so four workers each on a megabyte-sized file
// would hold four such trees together. Small files still parse side by
// side: torch's median file is under 10 KB.
const DefaultBudget = 768 << 10

// Budget bounds the text being parsed at once by the parses that share
// it: a parse of n bytes waits until n fits, and a text larger than the
// whole budget waits until it parses alone. It is safe for concurrent use.
// Waiting takes no context: what it waits for is other parses, which end
// on their own.
type Budget struct {
	limit int
	mu    sync.Mutex // guards inUse and the waits on free
	free  *sync.Cond // signalled when bytes are given back
	inUse int
}

// NewBudget returns a budget of limit bytes (at least one).
func NewBudget(limit int) *Budget {
	b := &Budget{limit: max(limit, 1)}
	b.free = sync.NewCond(&b.mu)
	return b
}

// Take waits until n bytes fit and takes them; call release once the
// parse and everything holding its tree are done. A nil Budget takes
// nothing.
func (b *Budget) Take(n int) (release func()) {
	if b == nil {
		return func() {}
	}
	w := min(max(n, 0), b.limit)
	b.mu.Lock()
	for b.inUse+w > b.limit {
		b.free.Wait()
	}
	b.inUse += w
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.inUse -= w
		b.mu.Unlock()
		b.free.Broadcast()
	}
}
