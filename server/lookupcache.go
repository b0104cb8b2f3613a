package server

import "sync"

const (
	// maxCachedLookups bounds a package's lookup cache. Editors hover a
	// few hundred distinct names in a session; when a pathological client
	// exceeds the bound the cache starts over rather than tracking
	// recency.
	maxCachedLookups = 4096
	// maxCachedBytes bounds the strings a package's cache holds in all
	// (a torch hover is about 1 KB, so 4,096 of them fit several times
	// over); past it the cache starts over, as past maxCachedLookups.
	maxCachedBytes = 16 << 20
	// maxEntryBytes bounds one cached answer. The helper's answers are cut
	// well below it (remote.HelperLimits); a larger one is served, not
	// kept, so a target that sends huge answers cannot fill the cache.
	maxEntryBytes = 256 << 10
	// entryOverhead approximates a cached target's fixed size: the struct
	// and its map entry.
	entryOverhead = 256
)

// lookupCache remembers, for one mirrored package, what each dotted name
// resolved to and its rendered hover. A pkgState is replaced whenever the
// mirror changes, so the cache never outlives the sources it describes.
// Resolving again would cost an index walk, a docstring read from disk or
// a round trip to the target's helper; the cached answer costs a map read.
type lookupCache struct {
	mu    sync.Mutex // guards m and bytes
	m     map[string]*target
	bytes int // entrySize of everything in m
}

// get returns the cached target of qualname (shared: callers copy it
// before changing anything).
func (c *lookupCache) get(qualname string) (*target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[qualname]
	return t, ok
}

// put stores a resolved target, stripped of the reference that led to it,
// with its hover rendered once. It reports whether the target was kept:
// one over maxEntryBytes is not.
func (c *lookupCache) put(qualname string, t *target) bool {
	cached := *t
	cached.ref = refZero
	cached.hover = renderHover(&cached)
	size := entrySize(qualname, &cached)
	if size > maxEntryBytes {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[qualname]; ok {
		c.bytes -= entrySize(qualname, old)
		delete(c.m, qualname)
	}
	if c.m == nil || len(c.m) >= maxCachedLookups || c.bytes+size > maxCachedBytes {
		c.m = make(map[string]*target)
		c.bytes = 0
	}
	c.m[qualname] = &cached
	c.bytes += size
	return true
}

// size returns the bytes the cache accounts for.
func (c *lookupCache) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}

// entrySize is what a cached target holds: its strings and a fixed
// overhead. The spec and package are shared with the session, not
// counted.
func entrySize(qualname string, t *target) int {
	n := entryOverhead + len(qualname) + len(t.qualname) + len(t.kind) + len(t.signature) + len(t.docSummary) +
		len(t.via) + len(t.localPath) + len(t.targetPath) + len(t.hover)
	for _, s := range t.decorators {
		n += len(s) + 16
	}
	for _, s := range t.chain {
		n += len(s) + 16
	}
	return n
}
