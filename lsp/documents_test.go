package lsp

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFilePath(t *testing.T) {
	tests := []struct {
		uri    string
		want   string
		wantOK bool
	}{
		{"file:///home/u/a.py", "/home/u/a.py", true},
		{"file:///home/u/my%20file.py", "/home/u/my file.py", true},
		{"file:///home/u/gr%C3%B6%C3%9Fe.py", "/home/u/größe.py", true},
		{"untitled:Untitled-1", "", false},
		{"vscode-notebook-cell:/a.ipynb#x", "", false},
		{"", "", false},
		{"::::", "", false},
		{"file:///%zz", "/%zz", true},
		{"file://", "", true},
	}
	for _, tt := range tests {
		got, ok := filePath(tt.uri)
		if ok != tt.wantOK || (ok && tt.want != "" && got != tt.want) {
			t.Errorf("filePath(%q) = %q, %v; want %q, %v", tt.uri, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzFilePath(f *testing.F) {
	for _, s := range []string{"file:///a/b.py", "untitled:x", "file://host/share/x", "file:///c%3A/x", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		filePath(u) // must not panic, unlike uri.URI.Filename
	})
}

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
