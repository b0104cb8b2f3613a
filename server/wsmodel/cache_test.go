package wsmodel

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second build reads no file whose size and time are unchanged; an
// edited file is read again and its verdict follows; a cache file of
// another key, forged, or replaced by a named pipe is a cold build.
func TestCacheAcrossBuilds(t *testing.T) {
	t.Parallel()
	cat := fixtureCatalog(t)
	dir := writeArchive(t, "testdata/paths/loader_returns_compiled.txtar").dir
	cache := filepath.Join(t.TempDir(), "ws.gob")
	build := func(key string) (*Model, Stats) {
		t.Helper()
		ix := testIndexer(dir, cat)
		ix.CacheFile, ix.CacheKey = cache, key
		m, st, err := ix.Build(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.CacheError != "" {
			t.Fatalf("cache: %s", st.CacheError)
		}
		return m, st
	}
	flagged := func(m *Model) bool { return len(m.Verdicts().Findings[filepath.Join(dir, "server.py")]) > 0 }

	m, st := build("torch-a")
	if st.Files != 2 || st.Cached != 0 || !flagged(m) {
		t.Fatalf("cold: %+v, flagged %v", st, flagged(m))
	}
	m, st = build("torch-a")
	if st.Files != 2 || st.Cached != 2 || !flagged(m) {
		t.Fatalf("warm: %+v, flagged %v", st, flagged(m))
	}

	model := filepath.Join(dir, "model.py")
	text, _ := os.ReadFile(model)
	os.WriteFile(model, []byte(strings.Replace(string(text), "reduce-overhead", "default", 1)), 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(model, later, later)
	m, st = build("torch-a")
	if st.Cached != 1 || flagged(m) {
		t.Fatalf("after an edit of model.py: %+v, flagged %v", st, flagged(m))
	}

	if _, st = build("torch-b"); st.Cached != 0 {
		t.Errorf("another target's torch used the cache: %+v", st)
	}
	os.WriteFile(cache, []byte("not a cache"), 0o644)
	if _, st = build("torch-b"); st.Cached != 0 || st.Files != 2 {
		t.Errorf("a forged cache: %+v", st)
	}
	os.Remove(cache)
	if err := syscall.Mkfifo(cache, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan Stats, 1)
	go func() {
		ix := testIndexer(dir, cat)
		ix.CacheFile, ix.CacheKey = cache, "torch-b"
		_, st, _ := ix.Build(context.Background())
		done <- st
	}()
	select {
	case st := <-done:
		if st.Files != 2 || st.Cached != 0 {
			t.Errorf("a named pipe for a cache: %+v", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the build blocked on a named pipe in the cache's place")
	}
}

// The directory Exclude names (torchlsp's cache, here inside the
// workspace) is never indexed.
func TestExcludedDirectory(t *testing.T) {
	t.Parallel()
	cat := fixtureCatalog(t)
	dir := writeArchive(t, "testdata/paths/loader_returns_compiled.txtar").dir
	cache := filepath.Join(dir, "torchlsp-cache")
	if err := os.MkdirAll(filepath.Join(cache, "site", "torch"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cache, "site", "torch", "x.py"), []byte("import torch\n"), 0o644)
	ix := testIndexer(dir, cat)
	ix.Exclude = cache
	m, st, err := ix.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.File(filepath.Join(cache, "site", "torch", "x.py")); ok || st.Files != 2 {
		t.Errorf("the excluded directory was indexed: %+v", st)
	}
	for _, tt := range []struct {
		dir, path string
		want      bool
	}{{"/a/b", "/a/b", true}, {"/a/b", "/a/b/c", true}, {"/a/b", "/a/bc", false}, {"/a/b", "/a", false}, {"", "/a", false}, {"/a/b/", "/a/b/../b/c", true}} {
		if got := Under(tt.dir, tt.path); got != tt.want {
			t.Errorf("Under(%q, %q) = %v", tt.dir, tt.path, got)
		}
	}
}
