package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/source"
)

func TestFileMappers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.py")
	if err := os.WriteFile(path, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newFileMappers(1, fileMapperBytes)
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

// A location's file is mapped only when it is a regular file within the
// bound: a named pipe, a device or a huge file named by a path (a target's
// paths, a client's forged item) is refused at once, not read without end.
func TestFileMappersRefuseWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.py")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxMappedFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo.py")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newFileMappers(4, fileMapperBytes)
	for _, path := range []string{huge, fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			_, err := c.get(path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s was mapped", path)
			}
			t.Logf("%s: %v", path, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("mapping %s did not return within 10s: it blocked or read without end", path)
		}
	}
}

// The cache holds at most its bound in bytes (text and line tables): the
// least recently used go first, and a file larger than the bound is still
// mapped, held alone.
func TestFileMappersByteBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, size int) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Repeat("x = 1\n", size/6)), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a, b, c3, big := write("a.py", 600), write("b.py", 600), write("c.py", 600), write("big.py", 6000)
	c := newFileMappers(64, 2100)
	for _, p := range []string{a, b, c3} {
		if _, err := c.get(p); err != nil {
			t.Fatal(err)
		}
	}
	if c.lru.Len() != 2 || c.index[a] != nil || c.bytes > 2100 {
		t.Errorf("after three files of %d bytes: %d entries, %d bytes, a held %v; want two under 2100", mapperBytes(source.NewMapper(strings.Repeat("x = 1\n", 100))), c.lru.Len(), c.bytes, c.index[a] != nil)
	}
	m, err := c.get(big)
	if err != nil || m.LineCount() != 1001 {
		t.Fatalf("the file over the bound: %v, %v", m, err)
	}
	if c.lru.Len() != 1 || c.index[big] == nil {
		t.Errorf("holds %d entries after the file over the bound; want it alone", c.lru.Len())
	}
	var sum int64
	for el := c.lru.Front(); el != nil; el = el.Next() {
		sum += el.Value.(*fileMapper).bytes
	}
	if sum != c.bytes {
		t.Errorf("bytes %d, entries hold %d", c.bytes, sum)
	}
}
