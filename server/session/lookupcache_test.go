package session

import (
	"fmt"
	"strings"
	"testing"
)

// testHover renders a hover as the engine's does in size: the signature
// and the docstring summary, with a header.
func testHover(d *Definition) string {
	return "def " + d.Name() + d.Signature + "\n" + d.DocSummary + "\n"
}

func TestLookupCacheBound(t *testing.T) {
	var c lookupCache
	ps := &Package{}
	for i := 0; i <= maxCachedLookups; i++ {
		c.put(fmt.Sprintf("torch.f%d", i), &Definition{Qualname: fmt.Sprintf("torch.f%d", i), Package: ps, Missing: true}, testHover)
	}
	if n := len(c.m); n != 1 {
		t.Errorf("after %d puts the cache holds %d entries, want 1 (it starts over when full)", maxCachedLookups+1, n)
	}
	got, ok := c.get(fmt.Sprintf("torch.f%d", maxCachedLookups))
	if !ok || got.Hover == "" {
		t.Errorf("last entry = %+v, %v; want a rendered hover", got, ok)
	}
}

// The cache is bounded in bytes as well as entries: an answer over
// maxEntryBytes is not kept, and many large answers (a target whose helper
// sends long docstrings and signatures) never hold more than
// maxCachedBytes.
func TestLookupCacheByteBound(t *testing.T) {
	t.Parallel()
	var c lookupCache
	ps := &Package{}
	huge := strings.Repeat("d", maxEntryBytes)
	if c.put("torch.huge", &Definition{Qualname: "torch.huge", Package: ps, Kind: "function", DocSummary: huge}, testHover) {
		t.Error("an answer over maxEntryBytes was cached")
	}
	if _, ok := c.get("torch.huge"); ok {
		t.Error("torch.huge is in the cache")
	}
	big := strings.Repeat("s", 100<<10) // under the entry limit, with the hover twice that
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("torch.f%d", i)
		if !c.put(name, &Definition{Qualname: name, Package: ps, Kind: "function", Signature: big}, testHover) {
			t.Fatalf("put %d refused an answer of %d bytes", i, len(big))
		}
		if _, bytes := c.size(); bytes > maxCachedBytes {
			t.Fatalf("after %d puts the cache holds %d bytes, over %d", i+1, bytes, maxCachedBytes)
		}
	}
	n, bytes := c.size()
	t.Logf("after 1000 answers of 100 KB: %d entries, %d bytes", n, bytes)
	if n == 0 || bytes == 0 {
		t.Error("nothing cached")
	}
	// Replacing an entry does not count it twice.
	c.put("torch.f999", &Definition{Qualname: "torch.f999", Package: ps, Missing: true}, testHover)
	if _, after := c.size(); after >= bytes {
		t.Errorf("replacing a 200 KB entry with a small one: %d → %d bytes", bytes, after)
	}
}
