package gobfile

import (
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRoundTripAndNoLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "cache.bin")
	type rec struct {
		A int
		B []string
	}
	if err := Write(path, rec{A: 3, B: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := Read(path, &got); err != nil || got.A != 3 || len(got.B) != 1 {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
	if err := os.WriteFile(path, []byte("not gob"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Read(path, &got); err == nil {
		t.Error("a damaged file decoded")
	}
}

// A Cache builds once, serves the file while the fingerprint holds, and
// builds again when it moves or the file is of another format.
func TestCache(t *testing.T) {
	t.Parallel()
	type val struct {
		FP     string
		N      int
		loaded bool
	}
	path := filepath.Join(t.TempDir(), "v.bin")
	c := Cache[val]{Kind: "test", Format: 1, Fingerprint: func(v *val) string { return v.FP }, Loaded: func(v *val) { v.loaded = true }}
	builds := 0
	build := func(fp string) func() (*val, error) {
		return func() (*val, error) { builds++; return &val{FP: fp, N: builds}, nil }
	}
	first, err := c.Open(path, "a", build("a"))
	if err != nil || first.N != 1 || first.loaded {
		t.Fatalf("first Open = %+v, %v", first, err)
	}
	again, err := c.Open(path, "a", build("a"))
	if err != nil || again.N != 1 || !again.loaded || builds != 1 {
		t.Errorf("second Open = %+v, %v after %d builds; want the file's value", again, err, builds)
	}
	moved, err := c.Open(path, "b", build("b"))
	if err != nil || moved.N != 2 {
		t.Errorf("Open with another fingerprint = %+v, %v; want a new build", moved, err)
	}
	other := Cache[val]{Kind: "test", Format: 2, Fingerprint: c.Fingerprint}
	if _, err := other.Load(path); err == nil {
		t.Error("a file of format 1 loaded as format 2")
	}
	if err := c.Save(path, nil); err == nil {
		t.Error("saved nothing")
	}
}

// A cache file that is not one torchlsp wrote (a named pipe, a link to
// /dev/zero or to a good cache, a directory, a huge file) is a miss: Open
// rebuilds at once, never blocks on it or reads it into memory.
func TestCacheForgedFile(t *testing.T) {
	t.Parallel()
	type val struct{ FP string }
	c := Cache[val]{Kind: "test", Format: 1, Fingerprint: func(v *val) string { return v.FP }}
	good := filepath.Join(t.TempDir(), "good.bin")
	if err := c.Save(good, &val{FP: "a"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		plant   func(t *testing.T, path string)
		wantErr string // in Load's error
	}{
		{"named pipe", plant.FIFO, "is a named pipe, not a regular file"},
		{"link to /dev/zero", plant.DevZero, "is a symbolic link"},
		{"link to a good cache", func(t *testing.T, path string) {
			if err := os.Symlink(good, path); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"sparse file over the bound", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, MaxBytes+1); err != nil {
				t.Fatal(err)
			}
		}, "over the 67108864-byte limit"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "v.bin")
			tt.plant(t, path)
			plant.Within(t, 10*time.Second, func() {
				if _, err := c.Load(path); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Load: err %v, want %q", err, tt.wantErr)
				}
				builds := 0
				v, err := c.Open(path, "a", func() (*val, error) { builds++; return &val{FP: "a"}, nil })
				if err != nil || v.FP != "a" || builds != 1 {
					t.Errorf("Open = %+v, %v after %d builds; want one build", v, err, builds)
				}
			})
		})
	}
}
