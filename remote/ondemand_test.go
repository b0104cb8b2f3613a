package remote

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SiteRel finds a file's place under the site dir of a mirror or an
// on-demand tree in the cache, through links, and nowhere else.
func TestSiteRel(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	mirrored := filepath.Join(cache, "gpu", "abc123", "torch-2.11", "site", "torch", "nn", "functional.py")
	onDemand := filepath.Join(cache, "ondemand", "torch-x1", "site", "torch", "__init__.py")
	outside := filepath.Join(t.TempDir(), "site", "torch", "x.py")
	for _, f := range []string{mirrored, onDemand, outside} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "view", "functional.py")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mirrored, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, want string
		ok         bool
	}{
		{mirrored, "torch/nn/functional.py", true},
		{onDemand, "torch/__init__.py", true},
		{link, "torch/nn/functional.py", true},
		{outside, "", false},
		{filepath.Join(cache, "site", "x.py"), "", false}, // too shallow for a mirror
	} {
		got, ok := SiteRel(cache, tc.file)
		if got != tc.want || ok != tc.ok {
			t.Errorf("SiteRel(%s) = %q, %v; want %q, %v", tc.file, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := SiteRel("", mirrored); ok {
		t.Error("a file placed with no cache")
	}
}

// The files an on-demand tree takes are the listing's, whole, inside the
// package; each lands read-only, and a leftover tree of an earlier run
// goes.
func TestOnDemandTreeChecksFiles(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	stale := filepath.Join(cache, "ondemand", "torch-old")
	if err := os.MkdirAll(filepath.Join(stale, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * onDemandMaxAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	info := PackageInfo{Name: "torch", Version: "2.11.0", Site: "/opt/site", Member: "torch", Location: "/opt/site/torch", IsPackage: true}
	listing := FileListing{Site: "/opt/site", Member: "torch", Files: []ListedFile{
		{Path: "torch/__init__.py", Size: 6},
		{Path: "torch/nn/__init__.py", Size: 3},
		{Path: "torch/../etc/passwd.py", Size: 3},
		{Path: "torch/notes.txt", Size: 3},
	}}
	open := func(first ...FetchedFile) (*OnDemandTree, error) {
		return OpenOnDemand(cache, OnDemandSource{Context: context.Background(), Spec: Spec{Name: "gpu"}, Info: info, Listing: listing, First: first})
	}
	for _, tc := range []struct {
		name string
		file FetchedFile
		want string
	}{
		{"not listed", FetchedFile{Path: "torch/other.py", Data: []byte("x")}, "not in the listing"},
		{"short", FetchedFile{Path: "torch/__init__.py", Data: []byte("x = ")}, "the listing says 6"},
		{"escapes", FetchedFile{Path: "torch/../etc/passwd.py", Data: []byte("x=1")}, "not a clean path"},
		{"not source", FetchedFile{Path: "torch/notes.txt", Data: []byte("abc")}, "not a Python source file"},
	} {
		if _, err := open(tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: OpenOnDemand = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	tree, err := open(FetchedFile{Path: "torch/__init__.py", Data: []byte("x = 1\n")})
	if err != nil {
		t.Fatal(err)
	}
	m := tree.Mirror()
	if want := MirrorDir(cache, Spec{Name: "gpu"}, info); m.Root != want {
		t.Errorf("the tree is in %s, want where its mirror will be, %s", m.Root, want)
	}
	local := filepath.Join(m.SiteDir, "torch", "__init__.py")
	st, err := os.Stat(local)
	if err != nil || st.Mode().Perm() != 0o444 {
		t.Fatalf("stored file: %v, %v; want it read-only", st, err)
	}
	if data, err := tree.Read("torch/__init__.py"); err != nil || string(data) != "x = 1\n" {
		t.Errorf("Read = %q, %v", data, err)
	}
	if got := m.TargetPath(local); got != "/opt/site/torch/__init__.py" {
		t.Errorf("TargetPath = %s", got)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale tree %s stays: %v", stale, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(local)); len(entries) != 1 {
		t.Errorf("left beside the file: %v", entries)
	}
	bad := listing
	bad.Site = "/elsewhere"
	if _, err := OpenOnDemand(cache, OnDemandSource{Context: context.Background(), Info: info, Listing: bad}); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Errorf("a listing of another site: %v", err)
	}
}

// removePartial removes a version's partial tree (files read on demand,
// no manifest) unused for partialMaxAge, never a mirror, a directory being
// written, or the tree in use.
func TestRemovePartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-2 * partialMaxAge)
	mk := func(name string, manifest bool, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "site", "torch"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "site", "torch", "x.py"), []byte("x = 1\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		if manifest {
			if err := os.WriteFile(filepath.Join(p, manifestName), []byte("{}"), 0o444); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(filepath.Join(p, "site", "torch"), 0o555); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(p, "site"), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("torch-1.0-aaaa", false, old)
	inUse := mk("torch-2.0-bbbb", false, old)
	fresh := mk("torch-3.0-cccc", false, time.Now())
	mirror := mk("torch-4.0-dddd", true, old)
	writing := mk(".tmp-torch-5", false, old)
	removePartial(dir, inUse, time.Now().Add(-partialMaxAge))
	for p, want := range map[string]bool{stale: false, inUse: true, fresh: true, mirror: true, writing: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// Where the complete mirror of the same install stands, an on-demand tree
// is that mirror: its answers name the mirror's paths (the same in every
// run), and its files are read from there, not from the target. A mirror
// whose install changed since (other counts), or whose files no longer
// match its manifest, gets a tree of its own.
func TestOnDemandTreeReadsTheCompleteMirrorOfTheSameInstall(t *testing.T) {
	t.Parallel()
	info := PackageInfo{Name: "torch", Version: "2.11.0", Site: "/opt/site", Member: "torch", Location: "/opt/site/torch", IsPackage: true, FilesCount: 1, Bytes: 6}
	listing := FileListing{Site: "/opt/site", Member: "torch", Files: []ListedFile{{Path: "torch/__init__.py", Size: 6}}}
	spec := Spec{Name: "gpu"}
	for _, tc := range []struct {
		name     string
		bytes    int64 // what the target states now
		damaged  bool  // the mirror's file truncated since it was made
		inMirror bool
	}{
		{"the same install", 6, false, true},
		{"files changed since", 7, false, false},
		{"the mirror damaged", 6, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cache := t.TempDir()
			final := MirrorDir(cache, spec, info)
			if err := os.MkdirAll(filepath.Join(final, "site", "torch"), 0o755); err != nil {
				t.Fatal(err)
			}
			text := "x = 1\n"
			if tc.damaged {
				text = "x"
			}
			if err := os.WriteFile(filepath.Join(final, "site", "torch", "__init__.py"), []byte(text), 0o444); err != nil {
				t.Fatal(err)
			}
			manifest, _ := json.Marshal(Manifest{Format: MirrorFormat, Target: "gpu", Package: "torch", Version: "2.11.0", Member: "torch",
				TargetPackageDir: "/opt/site/torch", TargetSiteDir: "/opt/site", Files: 1, Bytes: 6, TargetFiles: 1, TargetBytes: 6})
			if err := os.WriteFile(filepath.Join(final, manifestName), manifest, 0o644); err != nil {
				t.Fatal(err)
			}
			now := info
			now.Bytes = tc.bytes
			tree, err := OpenOnDemand(cache, OnDemandSource{Context: context.Background(), Spec: spec, Info: now, Listing: listing})
			if err != nil {
				t.Fatal(err)
			}
			if got := tree.Mirror().Root == final; got != tc.inMirror {
				t.Fatalf("the tree is in %s; in the mirror (%s): %v, want %v", tree.Mirror().Root, final, got, tc.inMirror)
			}
			if !tc.inMirror {
				return
			}
			// No client: a read that went to the target would fail.
			if data, err := tree.Read("torch/__init__.py"); err != nil || string(data) != "x = 1\n" {
				t.Errorf("Read = %q, %v; want the mirror's file", data, err)
			}
		})
	}
}
