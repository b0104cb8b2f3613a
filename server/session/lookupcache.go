package session

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
	// entryOverhead approximates a cached definition's fixed size: the struct
	// and its map entry.
	entryOverhead = 256
)

// lookupCache remembers, for one mirrored package, what each dotted name
// resolved to and its rendered hover. A Package is replaced whenever the
// mirror changes, so the cache never outlives the sources it describes.
// Resolving again would cost an index walk, a docstring read from disk or
// a round trip to the target's helper; the cached answer costs a map read.
type lookupCache struct {
	mu    sync.Mutex // guards m and bytes
	m     map[string]*Definition
	bytes int // entrySize of everything in m
}

// get returns the cached definition of qualname (shared: callers copy it
// before changing anything).
func (c *lookupCache) get(qualname string) (*Definition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[qualname]
	return t, ok
}

// put stores a resolved definition with its hover rendered once by
// render (none when nil). It reports whether the definition was kept: one
// over maxEntryBytes is not.
func (c *lookupCache) put(qualname string, d *Definition, render func(*Definition) string) bool {
	cached := *d
	if render != nil {
		cached.Hover = render(&cached)
	}
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
		c.m = make(map[string]*Definition)
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

// entrySize is what a cached definition holds: its strings and a fixed
// overhead. The target's name and the package are shared with the
// session, not counted.
func entrySize(qualname string, d *Definition) int {
	n := entryOverhead + len(qualname) + len(d.Qualname) + len(d.Kind) + len(d.Signature) + len(d.DocSummary) +
		len(d.Via) + len(d.LocalPath) + len(d.TargetPath) + len(d.ParamText) + len(d.Hover)
	for _, s := range d.Decorators {
		n += len(s) + 16
	}
	for _, s := range d.Chain {
		n += len(s) + 16
	}
	return n
}
