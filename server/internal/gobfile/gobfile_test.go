package gobfile

import (
	"os"
	"path/filepath"
	"testing"
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
