// Package plant puts hostile files where tests expect a reader to meet
// them (a named pipe nobody writes, a link to /dev/zero), and bounds how
// long the reader may take: a hostile file must fail its read at once,
// never block it. Test support, as internal/await is.
package plant

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FIFO makes a named pipe at path (skipping the test where the file
// system has none).
func FIFO(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// DevZero makes path a symbolic link to /dev/zero, an endless file.
func DevZero(t *testing.T, path string) {
	t.Helper()
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
}

// Within runs f and fails the test if it has not returned after d: a
// read that blocked on what was planted.
func Within(t testing.TB, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still reading after %v: the read blocked", d)
	}
}

// Tree writes files under dir, path → content: a content of "->TARGET"
// makes a symbolic link to TARGET, "|fifo" a named pipe, anything else a
// regular file holding it.
func Tree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		case content == "|fifo":
			err = syscall.Mkfifo(p, 0o600)
		default:
			err = os.WriteFile(p, []byte(content), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
