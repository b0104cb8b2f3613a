package pyindex

import (
	"encoding/binary"
	"errors"
	"github.com/torchlsp/torchlsp/internal/plant"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// plantLink puts a symbolic link to target at path.
func plantLink(target string) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
}

// A file at index.bin's name that Build did not write (a named pipe, a
// link to /dev/zero or even to a good cache, a directory, a file over
// maxCacheBytes, one whose counts pass the checksum but ask for more than
// maxDecodeBytes) is refused at once and the index is rebuilt from the
// sources; Build then puts a cache of its own in its place.
func TestCacheForgedFile(t *testing.T) {
	site := copyTree(t, fixtureSite)
	good := filepath.Join(t.TempDir(), "good.bin")
	want := resolveAll(t, buildWithCache(t, site, good))
	tests := []struct {
		name     string
		plant    func(t *testing.T, path string)
		wantErr  string // in loadCache's error
		replaced bool   // Build writes its own cache over it
	}{
		{"named pipe", plant.FIFO, "is a named pipe, not a regular file", true},
		{"link to /dev/zero", plant.DevZero, "is a symbolic link", true},
		{"link to a good cache", plantLink(good), "is a symbolic link", true},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory, not a regular file", false},
		{"sparse file over the bound", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, maxCacheBytes+1); err != nil {
				t.Fatal(err)
			}
		}, "over the 536870912-byte limit", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "index.bin")
			tt.plant(t, cache)
			plant.Within(t, 10*time.Second, func() {
				ix, err := Open(site, cache)
				if err != nil {
					t.Errorf("Open: %v", err)
					return
				}
				if err := ix.loadCache(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("loadCache: err %v, want %q", err, tt.wantErr)
				}
				if ix.Stats().FromCache {
					t.Error("a forged cache was trusted")
				}
				err = ix.Build(t.Context())
				if tt.replaced && err != nil {
					t.Errorf("Build: %v", err)
				}
				if st := ix.Stats(); st.Parsed != st.Files {
					t.Errorf("after Build: %+v, want every file parsed", st)
				}
				if got := resolveAll(t, ix); !reflect.DeepEqual(got, want) {
					t.Error("results differ after the rebuild")
				}
				if !tt.replaced {
					return
				}
				if st, err := os.Lstat(cache); err != nil || !st.Mode().IsRegular() {
					t.Errorf("Build left %v (%v) at the cache's name", st, err)
				}
				if reopened, err := Open(site, cache); err != nil || !reopened.Stats().FromCache {
					t.Errorf("the rebuilt cache is not used on the next open (%v)", err)
				}
			})
		})
	}
}

// reseal wraps payload in the header of a cache of ix, with its checksum.
func reseal(ix *Index, payload []byte) []byte {
	out := []byte(cacheMagic)
	out = binary.AppendUvarint(out, cacheVersion)
	out = binary.AppendUvarint(out, uint64(len(ix.fingerprint)))
	out = append(out, ix.fingerprint...)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(payload))
	return append(out, payload...)
}

// A cache whose counts pass the checksum and the bytes left, but would
// make far more memory than the file's size (empty items are a byte on
// disk, 16 or 144 in memory), is refused before anything is made.
func TestDecodeCountsBounded(t *testing.T) {
	ix := buildWithCache(t, copyTree(t, fixtureSite), "")
	nBindings := int(maxDecodeBytes/unsafe.Sizeof(binding{})) + 1
	nStrings := int(maxDecodeBytes/unsafe.Sizeof("")) + 1
	tests := []struct {
		name    string
		payload func() []byte
	}{
		{"bindings", func() []byte {
			// The first file's table holds one empty string; its record
			// counts nBindings bindings, each "a byte" of zeros that
			// follow.
			p := binary.AppendUvarint(nil, uint64(len(ix.files)))
			p = binary.AppendUvarint(p, 1)
			p = binary.AppendUvarint(p, 0)
			p = append(p, 0, 0, 0, 0) // rel, docStart, docEnd, docSummary
			p = binary.AppendUvarint(p, uint64(nBindings))
			return append(p, make([]byte, nBindings)...)
		}},
		{"strings", func() []byte {
			p := binary.AppendUvarint(nil, uint64(len(ix.files)))
			p = binary.AppendUvarint(p, uint64(nStrings))
			return append(p, make([]byte, nStrings)...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := reseal(ix, tt.payload())
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := ix.decodeCache(data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, errBadCache) || !strings.Contains(err.Error(), "counts more than") {
				t.Errorf("err %v, want the counts refused", err)
			}
			// The payload's copy as one string is made; the counted
			// items never are.
			if made := after.TotalAlloc - before.TotalAlloc; made > uint64(2*len(data))+64<<20 {
				t.Errorf("decoding made %d bytes for a %d-byte file", made, len(data))
			}
		})
	}
}

// A mirror's file swapped, after Open listed it, for a named pipe or a
// link to /dev/zero is read by no path of the index (parse, source, name
// table, docstring, parameters): each answers at once as for an unreadable
// file. A docstring range from the cache past the file's end or over the
// bound is not read either.
func TestMirrorFileForged(t *testing.T) {
	const rel = "torch/nn/functional.py"
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		want  error
	}{
		{"named pipe", plant.FIFO, localfile.ErrNotRegular},
		{"link to /dev/zero", plant.DevZero, localfile.ErrLink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := copyTree(t, fixtureSite)
			ix, err := Open(site, "")
			if err != nil {
				t.Fatal(err)
			}
			var f *fileState
			for _, g := range ix.files {
				if g.rel == rel {
					f = g
				}
			}
			if f == nil {
				t.Fatalf("%s not indexed", rel)
			}
			path := ix.abs(f)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, path)
			plant.Within(t, 10*time.Second, func() {
				if fd := ix.parse(f, ix.budget); fd == nil || len(fd.bindings) != 0 {
					t.Errorf("parse = %+v, want empty data", fd)
				}
				if _, err := ix.source(f); !errors.Is(err, tt.want) {
					t.Errorf("source: err %v, want %v", err, tt.want)
				}
				if tab := ix.table(f); tab != nil {
					t.Error("table made of a forged file")
				}
				if got := ix.readDoc(f, 0, 10, "summary"); got != "summary" {
					t.Errorf("readDoc = %q, want the summary", got)
				}
				if _, _, err := ix.Parameter(path, 10, "input"); !errors.Is(err, tt.want) {
					t.Errorf("Parameter: err %v, want %v", err, tt.want)
				}
			})
		})
	}
	t.Run("docstring range", func(t *testing.T) {
		ix, err := Open(copyTree(t, fixtureSite), "")
		if err != nil {
			t.Fatal(err)
		}
		f := ix.files[0]
		plant.Within(t, 10*time.Second, func() {
			for _, end := range []uint32{uint32(f.size) + 1, 1<<32 - 1} {
				if got := ix.readDoc(f, 0, end, "summary"); got != "summary" {
					t.Errorf("readDoc(0, %d) = %q, want the summary", end, got)
				}
			}
		})
	})
}
