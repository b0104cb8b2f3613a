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
