package remote

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PlaceInCache finds a target's directory and a package's mirror from any
// path inside them, through links, and nothing elsewhere in the cache.
func TestPlaceInCache(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	spec := Spec{Name: "gpu box", Python: "/opt/py/bin/python3", SSH: "me@gpu"}
	tdir := targetCacheDir(cache, spec)
	root := filepath.Join(tdir, "torch-2.11.0-0a1b2c3d")
	file := filepath.Join(root, "site", "torch", "nn", "functional.py")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "view")
	if err := os.Symlink(filepath.Join(root, "site"), link); err != nil {
		t.Fatal(err)
	}
	id := TargetIdentity(spec)
	for _, tc := range []struct {
		name, path string
		ok         bool
		root       string
	}{
		{"a file", file, true, root},
		{"the site dir", filepath.Join(root, "site"), true, root},
		{"the mirror's root", root, true, root},
		{"the target's directory", tdir, true, ""},
		{"through a link", filepath.Join(link, "torch", "nn", "functional.py"), true, root},
		{"the cache", cache, false, ""},
		{"the target's name only", filepath.Join(cache, "gpu_box"), false, ""},
		{"an on-demand tree of its own", filepath.Join(cache, "ondemand", "0123456789abcdef", "torch-x", "site"), false, ""},
		{"no identity", filepath.Join(cache, "gpu_box", "not-an-identity", "torch-1"), false, ""},
		{"a mirror being written", filepath.Join(tdir, ".tmp-torch-1-2", "site"), false, ""},
		{"outside", t.TempDir(), false, ""},
	} {
		pl, ok := PlaceInCache(cache, tc.path)
		if ok != tc.ok {
			t.Errorf("%s: PlaceInCache(%s) = %+v, %v; want ok %v", tc.name, tc.path, pl, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if pl.Root != tc.root || pl.Target != "gpu_box" || pl.Identity != id || pl.TargetDir != tdir {
			t.Errorf("%s: place = %+v, want root %s in %s", tc.name, pl, tc.root, tdir)
		}
		if !pl.Of(spec) {
			t.Errorf("%s: the place is not of its own target", tc.name)
		}
		other := spec
		other.Python = "/usr/bin/python3"
		if pl.Of(other) {
			t.Errorf("%s: the place is of a target reached otherwise", tc.name)
		}
		renamed := spec
		renamed.Name = "gpu"
		if pl.Of(renamed) {
			t.Errorf("%s: the place is of a target of another name", tc.name)
		}
	}
	if _, ok := PlaceInCache("", file); ok {
		t.Error("a place with no cache")
	}
}

// LookupMirrorIn finds the complete mirror in a target's directory, never
// a partial tree; an Unconfigured target runs nothing and says why.
func TestLookupMirrorInAndUnconfigured(t *testing.T) {
	t.Parallel()
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	cache := cacheDir(t)
	target := NewLocal(spec)
	defer target.Close()
	m, err := mirror(testContext(t), target, spec, info, cache, CompressNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := PlaceInCache(cache, m.SiteDir)
	if !ok || pl.Root != m.Root {
		t.Fatalf("place of the mirror = %+v, %v", pl, ok)
	}
	found, err := LookupMirrorIn(pl.TargetDir, "fixturepkg")
	if err != nil || found.Root != m.Root {
		t.Errorf("LookupMirrorIn = %+v, %v", found, err)
	}
	partial := filepath.Join(pl.TargetDir, "other-1.0-00000000", "site", "other")
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LookupMirrorIn(pl.TargetDir, "other"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a partial tree was found: %v", err)
	}
	u := Unconfigured{Label: "gpu", Reason: "not configured here"}
	if _, err := u.Start(context.Background(), Command{Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), `target "gpu": not configured here`) {
		t.Errorf("Start = %v", err)
	}
}
