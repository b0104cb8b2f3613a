package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickly runs f and fails the test if it has not returned within 10 s:
// a read that blocks on a FIFO never returns by itself. unblock, if not
// nil, is run then so that the blocked goroutine can end.
func quickly(t *testing.T, unblock func(), f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		if unblock != nil {
			unblock()
		}
		t.Fatal("still blocked after 10 s")
		return nil
	}
}

// unblockFIFO opens the FIFO p for writing without blocking and closes
// it, so that a reader blocked in its open returns.
func unblockFIFO(p string) func() {
	return func() {
		if fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	}
}

// replaceCacheFile puts make's result where p was, in a directory made
// writable for it.
func replaceCacheFile(t *testing.T, p string, make func(p string) error) {
	t.Helper()
	dir := filepath.Dir(p)
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, st.Mode().Perm())
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := make(p); err != nil {
		t.Fatal(err)
	}
}

// TestOpenMirrorReadsTheCacheAsHostile forges a mirror's manifest every
// way a file can be forged: a FIFO (once, open blocked until a writer
// came), a link to /dev/zero (a read without end), a link to a good
// manifest elsewhere, a manifest over the bound, and manifests whose
// limits exceed the binary's own. Each gives a clear error at once, or a
// limit clamped to the binary's, never a hang.
func TestOpenMirrorReadsTheCacheAsHostile(t *testing.T) {
	t.Parallel()
	spec := fixtureSpec(t)
	info := packageInfo(t, spec, "fixturepkg")
	own := DefaultMirrorLimits()
	manifestOf := func(t *testing.T, m *MirrorTree, edit func(*Manifest)) []byte {
		man := m.Manifest
		edit(&man)
		data, err := json.Marshal(man)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		name   string
		forge  func(t *testing.T, m *MirrorTree) (unblock func())
		want   string
		reused bool // Mirror reuses the forged mirror rather than fetching again
	}{
		{"named pipe", func(t *testing.T, m *MirrorTree) func() {
			p := filepath.Join(m.Root, manifestName)
			replaceCacheFile(t, p, func(p string) error { return syscall.Mkfifo(p, 0o644) })
			return unblockFIFO(p)
		}, "is a named pipe, not a regular file", false},
		{"link to /dev/zero", func(t *testing.T, m *MirrorTree) func() {
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.Symlink("/dev/zero", p) })
			return nil
		}, "is a symbolic link, not a regular file", false},
		{"link to a good manifest", func(t *testing.T, m *MirrorTree) func() {
			good := filepath.Join(t.TempDir(), manifestName)
			if err := os.WriteFile(good, manifestOf(t, m, func(*Manifest) {}), 0o444); err != nil {
				t.Fatal(err)
			}
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.Symlink(good, p) })
			return nil
		}, "is a symbolic link, not a regular file", false},
		{"manifest over the bound", func(t *testing.T, m *MirrorTree) func() {
			data := manifestOf(t, m, func(*Manifest) {})
			data = append(data, bytes.Repeat([]byte(" "), maxManifestBytes)...)
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.WriteFile(p, data, 0o444) })
			return nil
		}, "over the limit of 4 MiB", false},
		{"a per-file limit of 1 GiB", func(t *testing.T, m *MirrorTree) func() {
			// A file over the binary's limit, that the forged limit
			// would let through, counted in the manifest.
			big := int64(own.MaxFileBytes + 1)
			replaceCacheFile(t, filepath.Join(m.SiteDir, "fixturepkg", "big.py"), func(p string) error {
				return os.WriteFile(p, bytes.Repeat([]byte("#"), int(big)), 0o444)
			})
			data := manifestOf(t, m, func(man *Manifest) {
				man.MaxFileBytes = 1 << 30
				man.Files++
				man.Bytes += big
			})
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.WriteFile(p, data, 0o444) })
			return nil
		}, "over the per-file limit of 4 MiB", false},
		{"a narrower per-file limit", func(t *testing.T, m *MirrorTree) func() {
			data := manifestOf(t, m, func(man *Manifest) { man.MaxFileBytes = 10 })
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.WriteFile(p, data, 0o444) })
			return nil
		}, "over the per-file limit of 10 bytes", false},
		{"more files than the binary's limit", func(t *testing.T, m *MirrorTree) func() {
			data := manifestOf(t, m, func(man *Manifest) { man.Files = own.MaxFiles + 1 })
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.WriteFile(p, data, 0o444) })
			return nil
		}, "outside the limits of 20000 files", false},
		{"more bytes than the binary's limit", func(t *testing.T, m *MirrorTree) func() {
			data := manifestOf(t, m, func(man *Manifest) { man.Bytes = own.MaxBytes + 1 })
			replaceCacheFile(t, filepath.Join(m.Root, manifestName), func(p string) error { return os.WriteFile(p, data, 0o444) })
			return nil
		}, "outside the limits of 20000 files and 256 MiB per package", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			target := NewLocal(spec)
			defer target.Close()
			m, err := Mirror(testContext(t), target, spec, info, cache, nil)
			if err != nil {
				t.Fatal(err)
			}
			unblock := tt.forge(t, m)
			err = quickly(t, unblock, func() error {
				_, err := OpenMirror(m.Root)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenMirror: %v, want an error saying %q", err, tt.want)
			}
			err = quickly(t, unblock, func() error {
				_, err := LookupMirror(cache, spec, "fixturepkg")
				return err
			})
			if err == nil {
				t.Errorf("LookupMirror found the forged mirror")
			}
			// The next Mirror fetches it again, and it opens.
			var again *MirrorTree
			err = quickly(t, unblock, func() error {
				var err error
				again, err = Mirror(testContext(t), target, spec, info, cache, nil)
				return err
			})
			if err != nil {
				t.Fatalf("Mirror after the forgery: %v", err)
			}
			if _, err := OpenMirror(again.Root); err != nil {
				t.Errorf("the mirror made again: %v", err)
			}
		})
	}
}

// TestCacheDirectoriesDoNotBlock forges the directories of the cache that
// torchlsp lists (a target's directory, the on-demand trees') and the
// site's lock as FIFOs: every caller fails at once, or goes on, and none
// hangs.
func TestCacheDirectoriesDoNotBlock(t *testing.T) {
	t.Parallel()
	spec := Spec{Name: "gpu", Python: "python3"}
	cache := t.TempDir()
	t.Cleanup(func() { removeTree(cache) })
	targetDir := targetCacheDir(cache, spec)
	if err := os.MkdirAll(filepath.Dir(targetDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{targetDir, filepath.Join(cache, onDemandDirName)} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(unblockFIFO(p))
	}
	err := quickly(t, unblockFIFO(targetDir), func() error {
		_, err := LookupMirror(cache, spec, "torch")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("LookupMirror in a FIFO: %v", err)
	}
	info := PackageInfo{Name: "torch", Version: "2.11.0", Site: "/opt/site", Member: "torch", Location: "/opt/site/torch", IsPackage: true}
	err = quickly(t, unblockFIFO(targetDir), func() error {
		_, err := OpenOnDemand(cache, OnDemandSource{Context: context.Background(), Spec: spec, Info: info,
			Listing: FileListing{Site: info.Site, Member: info.Member}})
		return err
	})
	if err == nil {
		t.Errorf("OpenOnDemand made a tree in a FIFO")
	}

	lock := filepath.Join(cache, sitesDir, "."+siteKey(spec)+siteLockExt)
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(lock, 0o644); err != nil {
		t.Fatal(err)
	}
	err = quickly(t, unblockFIFO(lock), func() error {
		_, err := BuildSite(context.Background(), cache, spec, SiteLayout{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "is a named pipe, not a regular file") {
		t.Errorf("BuildSite with a FIFO for its lock: %v", err)
	}
}

// TestManifestStaysWithinItsBound: a mirror whose skip list would make
// its manifest larger than OpenMirror reads keeps the first entries and
// counts the rest.
func TestManifestStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("<", maxPath-20) // JSON writes each as \u003c
	man := Manifest{Format: MirrorFormat, Package: "torch", Member: "torch", TargetSiteDir: "/site"}
	for i := 0; i < maxSkipped; i++ {
		man.Skipped = append(man.Skipped, SkippedFile{Path: "torch/" + long + ".py", Size: 1, Reason: strings.Repeat("<", 200)})
	}
	data, err := manifestJSON(man)
	if err != nil {
		t.Fatal(err)
	}
	var got Manifest
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(data) > maxManifestBytes || len(got.Skipped) == 0 || len(got.Skipped)+got.SkippedMore != maxSkipped {
		t.Errorf("manifest of %d bytes, %d skipped listed and %d counted", len(data), len(got.Skipped), got.SkippedMore)
	}
}
