package syntax

import (
	"context"
	"sync"
)

// DefaultBudget is the source a process parses at once when its parses
// share one Budget: the C memory of a parse grows with its text (about 30
// bytes per byte of Python), so four workers each on a megabyte-sized file
// would hold four such trees together. Small files still parse side by
// side: torch's median file is under 10 KB, and 9 of its 2,141 files are
// over this budget (4.6 MB of 41 MB), which parse one at a time. At 768
// KiB the cold server's peak with four build workers was 97–106 MB; at
// 256 KiB, 89–96 MB, the build 16% longer (docs/BENCHMARKS.md, "The
// parse budget").
const DefaultBudget = 256 << 10

// trimEvery is how much text the parses sharing a Budget go through
// before the C memory libc holds free goes back to the system. glibc keeps
// what a thread's arena freed for that arena's next allocation, and parses
// move between threads: without this every arena would keep the
// high-water mark of the trees it ever held.
const trimEvery = 2 << 20

// Budget bounds the text being parsed at once by the parses that share
// it: a parse of n bytes waits until n fits, and a text larger than the
// whole budget waits until it parses alone. Takers are served in the order
// they came: a large text waits only for the parses already in flight,
// never behind small ones that keep arriving (an index build's stream of
// small files starved a large document's check for as long as the build
// ran). Every trimEvery bytes parsed, the C memory freed meanwhile goes
// back to the system. It is safe for concurrent use. Waiting takes no
// context: what it waits for is other parses, which end on their own; a
// taker must not hold a share while it takes another.
type Budget struct {
	limit int
	mu    sync.Mutex // guards inUse, the tickets, sinceTrim and the waits on free
	free  *sync.Cond // signalled when bytes are given back or a turn passes
	inUse int
	// next is the ticket the next taker draws; serving is the ticket whose
	// turn it is.
	next, serving uint64
	// abandoned are the tickets after serving whose takers gave up.
	abandoned map[uint64]bool
	// sinceTrim counts the bytes parsed since the last trim.
	sinceTrim int
}

// NewBudget returns a budget of limit bytes (at least one).
func NewBudget(limit int) *Budget {
	b := &Budget{limit: max(limit, 1)}
	b.free = sync.NewCond(&b.mu)
	return b
}

// OrDefault returns b, or a new budget of DefaultBudget when b is nil: for
// work that may be given a budget to share and otherwise has its own.
func (b *Budget) OrDefault() *Budget {
	if b == nil {
		return NewBudget(DefaultBudget)
	}
	return b
}

// Take waits until n bytes fit and takes them; call release once the
// parse and everything holding its tree are done. A nil Budget takes
// nothing.
func (b *Budget) Take(n int) (release func()) {
	release, _ = b.TakeContext(context.Background(), n)
	return release
}

// TakeContext is Take that gives up when ctx is done, as when the parse
// is no longer wanted (a newer version of the document, the document
// closed): it returns ctx's error and takes nothing, and those behind it
// in line go on.
func (b *Budget) TakeContext(ctx context.Context, n int) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	w := min(max(n, 0), b.limit)
	b.mu.Lock()
	ticket := b.next
	b.next++
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			b.mu.Lock()
			defer b.mu.Unlock() // the waiter is waiting or has not yet looked
			b.free.Broadcast()
		})
		defer stop()
	}
	for ticket != b.serving || b.inUse+w > b.limit {
		if err := ctx.Err(); err != nil {
			b.abandon(ticket)
			b.mu.Unlock()
			b.free.Broadcast()
			return func() {}, err
		}
		b.free.Wait()
	}
	b.inUse += w
	b.advance()
	b.mu.Unlock()
	b.free.Broadcast() // the next in line may fit too
	return func() {
		b.mu.Lock()
		b.inUse -= w
		b.sinceTrim += max(n, 0)
		trim := b.sinceTrim >= trimEvery
		if trim {
			b.sinceTrim = 0
		}
		b.mu.Unlock()
		b.free.Broadcast()
		if trim {
			releaseFreeMemory()
		}
	}, nil
}

// abandon gives up ticket, a taker whose context ended while it waited:
// its turn is passed over. b.mu is held.
func (b *Budget) abandon(ticket uint64) {
	if ticket == b.serving {
		b.advance()
		return
	}
	if b.abandoned == nil {
		b.abandoned = map[uint64]bool{}
	}
	b.abandoned[ticket] = true
}

// advance passes the turn to the next ticket whose taker still waits.
// b.mu is held.
func (b *Budget) advance() {
	b.serving++
	for b.abandoned[b.serving] {
		delete(b.abandoned, b.serving)
		b.serving++
	}
}
