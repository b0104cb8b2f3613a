package server

import "sync"

// maxCachedLookups bounds a package's lookup cache. Editors hover a few
// hundred distinct names in a session; when a pathological client exceeds
// the bound the cache starts over rather than tracking recency.
const maxCachedLookups = 4096

// lookupCache remembers, for one mirrored package, what each dotted name
// resolved to and its rendered hover. A pkgState is replaced whenever the
// mirror changes, so the cache never outlives the sources it describes.
// Resolving again would cost an index walk, a docstring read from disk or
// a round trip to the target's helper; the cached answer costs a map read.
type lookupCache struct {
	mu sync.Mutex
	m  map[string]*target
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
// with its hover rendered once.
func (c *lookupCache) put(qualname string, t *target) {
	cached := *t
	cached.ref = refZero
	cached.hover = renderHover(&cached)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedLookups {
		c.m = make(map[string]*target)
	}
	c.m[qualname] = &cached
}
