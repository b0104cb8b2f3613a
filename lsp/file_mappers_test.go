package lsp

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFileMappers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.py")
	if err := os.WriteFile(path, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newFileMappers(1)
	m1, err := c.get(path)
	if err != nil || m1.Text() != "x = 1\n" {
		t.Fatalf("get = %v, %v", m1, err)
	}
	if m2, _ := c.get(path); m2 != m1 {
		t.Error("unchanged file was read again")
	}
	if err := os.WriteFile(path, []byte("größe = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m3, err := c.get(path); err != nil || m3.Text() != "größe = 1\n" {
		t.Errorf("changed file = %v, %v; want the new text", m3, err)
	}
	other := filepath.Join(dir, "b.py")
	os.WriteFile(other, []byte("y"), 0o644)
	c.get(other)
	if c.lru.Len() != 1 {
		t.Errorf("cache holds %d entries, limit 1", c.lru.Len())
	}
	if _, err := c.get(filepath.Join(dir, "missing.py")); err == nil {
		t.Error("missing file mapped")
	}
}
