package pyindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// copyTree copies the .py/.pyi files of src into a new temporary dir.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

var roundTripNames = []string{
	"torch.nn.Linear", "torch.nn.Linear.to", "torch.compile", "torch.utils.checkpoint.checkpoint",
	"torch._inductor.config.triton.cudagraph_trees", "torch._C._is_key_in_tls", "torch.Tensor.dim",
	"torch.nn.functional.threshold_", "torch.__version__", "torch.optim._adamw_mod", "torch.sys",
}

func resolveAll(t testing.TB, ix *Index) []Resolution {
	t.Helper()
	var out []Resolution
	for _, q := range roundTripNames {
		r, err := ix.Resolve(q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func buildWithCache(t testing.TB, site, cache string) *Index {
	t.Helper()
	ix, err := Open(site, cache)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestCacheRoundTrip(t *testing.T) {
	site := copyTree(t, fixtureSite)
	cache := filepath.Join(t.TempDir(), "sub", "index.bin")
	built := buildWithCache(t, site, cache)
	st := built.Stats()
	if st.FromCache || st.Parsed != st.Files || st.Files < 20 {
		t.Fatalf("fresh build stats %+v", st)
	}
	want := resolveAll(t, built)
	wantMembers, _ := built.Members("torch.nn")

	loaded, err := Open(site, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Stats().FromCache {
		t.Fatal("cache not used")
	}
	got := resolveAll(t, loaded)
	gotMembers, _ := loaded.Members("torch.nn")
	if loaded.Stats().Parsed != 0 {
		t.Errorf("parsed %d files despite the cache", loaded.Stats().Parsed)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resolutions differ after a round trip:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(gotMembers, wantMembers) {
		t.Errorf("members differ after a round trip")
	}
	// Building a fully cached index changes nothing on disk.
	before, _ := os.Stat(cache)
	if err := loaded.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(cache); !after.ModTime().Equal(before.ModTime()) {
		t.Error("cache rewritten although nothing changed")
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(cache), "*.tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestCacheRejected(t *testing.T) {
	site := copyTree(t, fixtureSite)
	good := filepath.Join(t.TempDir(), "good.bin")
	want := resolveAll(t, buildWithCache(t, site, good))
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := append([]byte(nil), data...)
		b[i] ^= 0x55
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"garbage", []byte("not a cache file at all")},
		{"magic only", []byte(cacheMagic)},
		{"truncated header", data[:len(cacheMagic)+3]},
		{"truncated half", data[:len(data)/2]},
		{"truncated by one", data[:len(data)-1]},
		{"trailing byte", append(append([]byte(nil), data...), 0)},
		{"flipped payload byte", flip(len(data) - 10)},
		{"flipped version", flip(len(cacheMagic))},
		{"flipped fingerprint", flip(len(cacheMagic) + 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "index.bin")
			if err := os.WriteFile(cache, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			ix := buildWithCache(t, site, cache)
			if st := ix.Stats(); st.FromCache || st.Parsed != st.Files {
				t.Fatalf("bad cache trusted: %+v", st)
			}
			if got := resolveAll(t, ix); !reflect.DeepEqual(got, want) {
				t.Error("results differ after a rebuild")
			}
			reopened, err := Open(site, cache)
			if err != nil {
				t.Fatal(err)
			}
			if !reopened.Stats().FromCache {
				t.Error("rebuilt cache not used on the next open")
			}
		})
	}
}

func TestCacheStale(t *testing.T) {
	site := copyTree(t, fixtureSite)
	cache := filepath.Join(t.TempDir(), "index.bin")
	buildWithCache(t, site, cache)
	lin := filepath.Join(site, "torch/nn/modules/linear.py")
	src, _ := os.ReadFile(lin)
	if err := os.WriteFile(lin, append([]byte("# one more line\n"), src...), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(lin, later, later)
	ix := buildWithCache(t, site, cache)
	if ix.Stats().FromCache {
		t.Fatal("stale cache trusted")
	}
	r, err := ix.Resolve("torch.nn.Linear")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := findDef(t, site, "torch/nn/modules/linear.py", `^class (Linear)`, 0); r.Symbol.Line != want {
		t.Errorf("Linear at line %d, want %d", r.Symbol.Line, want)
	}

	// A fingerprint supplied by the caller (a mirror manifest hash) rules.
	withFP := filepath.Join(t.TempDir(), "fp.bin")
	ixA, _ := Open(site, withFP, WithFingerprint("manifest-a"))
	ixA.Build(context.Background())
	if ixB, _ := Open(site, withFP, WithFingerprint("manifest-a")); !ixB.Stats().FromCache {
		t.Error("same manifest: cache not used")
	}
	if ixC, _ := Open(site, withFP, WithFingerprint("manifest-b")); ixC.Stats().FromCache {
		t.Error("other manifest: cache trusted")
	}
}

// TestDecodeHostilePayload feeds the decoder payloads with a valid checksum
// but damaged contents: it must report corruption, never panic or hang.
func TestDecodeHostilePayload(t *testing.T) {
	ix := buildWithCache(t, copyTree(t, fixtureSite), "")
	enc := encodedCache(ix)
	d := &decoder{b: enc, off: len(cacheMagic)}
	d.uvarint()
	d.off += d.count()
	d.count()
	if d.err != nil {
		t.Fatal(d.err)
	}
	header, payload := enc[:d.off], enc[d.off+4:]
	reseal := func(p []byte) []byte {
		out := append([]byte(nil), header[:len(header)-binary.PutUvarint(make([]byte, 10), uint64(len(payload)))]...)
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(p))
		return append(out, p...)
	}
	if _, err := ix.decodeCache(reseal(payload)); err != nil {
		t.Fatalf("resealed original rejected: %v", err)
	}
	step := max(1, len(payload)/1500)
	rejected := 0
	for i := 0; i < len(payload); i += step {
		for _, mut := range []func([]byte) []byte{
			func(p []byte) []byte { p[i] ^= 0xff; return p },
			func(p []byte) []byte { p[i] = 0x80; return p }, // an unterminated varint
			func(p []byte) []byte { return p[:i] },
		} {
			p := mut(append([]byte(nil), payload...))
			if _, err := ix.decodeCache(reseal(p)); err != nil {
				if !errors.Is(err, errBadCache) {
					t.Fatalf("mutation at %d: unexpected error %v", i, err)
				}
				rejected++
			}
		}
	}
	if rejected == 0 {
		t.Error("no mutation was rejected")
	}
}

func TestResolveWhileBuilding(t *testing.T) {
	site := copyTree(t, fixtureSite)
	ix, err := Open(site, filepath.Join(t.TempDir(), "index.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- ix.Build(context.Background())
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range roundTripNames {
				if _, err := ix.Resolve(q); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if st := ix.Stats(); st.Parsed != st.Files {
		t.Errorf("parsed %d of %d files (each exactly once)", st.Parsed, st.Files)
	}
}

func TestBuildCancelled(t *testing.T) {
	site := copyTree(t, fixtureSite)
	cache := filepath.Join(t.TempDir(), "index.bin")
	ix, err := Open(site, cache)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ix.Build(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(cache); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cache written by a cancelled build: %v", err)
	}
	if _, err := ix.Resolve("torch.nn.Linear"); err != nil {
		t.Errorf("index unusable after a cancelled build: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("Open of a missing dir succeeded")
	}
	// A cache path that cannot be written fails Build but not the index.
	site := copyTree(t, fixtureSite)
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	ix, err := Open(site, filepath.Join(blocker, "index.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Build(context.Background()); err == nil {
		t.Error("Build succeeded writing under a file")
	}
	if _, err := ix.Resolve("torch.compile"); err != nil {
		t.Error(err)
	}
}

// encodedCache is the cache file saveCache writes for ix, in one buffer.
func encodedCache(ix *Index) []byte {
	var b bytes.Buffer
	if err := ix.writeCache(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}
