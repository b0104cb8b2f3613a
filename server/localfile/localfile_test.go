package localfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plant puts something hostile (or not) at path.
type plant func(t *testing.T, path string)

func regular(data string) plant {
	return func(t *testing.T, path string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func symlinkTo(target string) plant {
	return func(t *testing.T, path string) {
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
}

func fifo(t *testing.T, path string) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func directory(t *testing.T, path string) {
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

// sparse makes a file of size bytes without writing them.
func sparse(size int64) plant {
	return func(t *testing.T, path string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
}

// readBounded runs read and fails the test if it does not return: a FIFO
// or a device must never block the reader.
func readBounded(t *testing.T, read func() ([]byte, error)) ([]byte, error) {
	t.Helper()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		d, err := read()
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("still reading after 10s: the read blocked")
	}
	return nil, nil
}

// openAndRead reads, within the test's limit, a file OpenIn or
// OpenNoFollow proved regular, and says whether its owner is the user.
func openAndRead(f *os.File, st os.FileInfo, err error) ([]byte, error) {
	if err != nil {
		if f != nil {
			return nil, errors.New("an open file came with the error")
		}
		return nil, err
	}
	defer f.Close()
	if !st.Mode().IsRegular() || !OwnedByMe(st) {
		return nil, errors.New("proved a file that is not a regular file of the user's")
	}
	return ReadOpen(f, st.Name(), 64)
}

func TestRead(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside.py")
	regular("SECRET = 1\n")(t, outside)
	const limit = 64
	tests := []struct {
		name    string
		plant   plant
		follow  string // error substring (or "" for success) for Read
		noLink  string // … for ReadNoFollow
		inRoot  string // … for ReadIn
		wantErr error  // errors.Is for every failing way
	}{
		{"small file", regular("import torch\n"), "", "", "", nil},
		{"empty file", regular(""), "", "", "", nil},
		{"file at the limit", regular(strings.Repeat("x", limit)), "", "", "", nil},
		{"file over the limit", regular(strings.Repeat("x", limit+1)), "65 bytes, over the 64-byte limit", "65 bytes, over the 64-byte limit", "65 bytes, over the 64-byte limit", ErrTooLarge},
		{"sparse 1 GiB file", sparse(1 << 30), "over the 64-byte limit", "over the 64-byte limit", "over the 64-byte limit", ErrTooLarge},
		{"named pipe", fifo, "is a named pipe, not a regular file", "is a named pipe, not a regular file", "is a named pipe, not a regular file", ErrNotRegular},
		{"directory", directory, "is a directory, not a regular file", "is a directory, not a regular file", "is a directory, not a regular file", ErrNotRegular},
		{"link to /dev/zero", symlinkTo("/dev/zero"), "is a character device, not a regular file", "is a symbolic link", "escapes from parent", nil},
		{"link to /dev/null", symlinkTo("/dev/null"), "is a character device, not a regular file", "is a symbolic link", "escapes from parent", nil},
		{"link to a file outside", symlinkTo(outside), "", "is a symbolic link", "escapes from parent", nil},
		{"link to a pipe beside it", func(t *testing.T, path string) {
			fifo(t, path+".pipe")
			symlinkTo(filepath.Base(path)+".pipe")(t, path)
		}, "is a named pipe", "is a symbolic link", "is a named pipe", ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "f.py")
			tt.plant(t, path)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			ways := []struct {
				name string
				read func() ([]byte, error)
				want string
			}{
				{"Read", func() ([]byte, error) { return Read(path, limit) }, tt.follow},
				{"ReadNoFollow", func() ([]byte, error) { return ReadNoFollow(path, limit) }, tt.noLink},
				{"ReadIn", func() ([]byte, error) { return ReadIn(root, "f.py", limit) }, tt.inRoot},
				// A file proved and then read on one handle: what the
				// proof refuses is never opened for reading.
				{"OpenIn", func() ([]byte, error) { return openAndRead(OpenIn(root, "f.py")) }, tt.inRoot},
				{"OpenNoFollow", func() ([]byte, error) { return openAndRead(OpenNoFollow(path)) }, tt.noLink},
			}
			for _, w := range ways {
				data, err := readBounded(t, w.read)
				if w.want == "" {
					if err != nil {
						t.Errorf("%s: %v", w.name, err)
					} else if int64(len(data)) > limit {
						t.Errorf("%s: %d bytes", w.name, len(data))
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), w.want) {
					t.Errorf("%s: err %v, want %q", w.name, err, w.want)
				}
				if data != nil {
					t.Errorf("%s: returned %d bytes with the error", w.name, len(data))
				}
				if tt.wantErr != nil && err != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("%s: err %v is not %v", w.name, err, tt.wantErr)
				}
			}
		})
	}
}

// A regular file whose content outgrows what fstat said (here a /proc
// file, which says 0 bytes) is refused once the limit is passed, not read
// to its end.
func TestReadGrowsPastLimit(t *testing.T) {
	t.Parallel()
	const path = "/proc/self/maps"
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		t.Skipf("%s is not a zero-sized regular file here: %v", path, err)
	}
	data, err := readBounded(t, func() ([]byte, error) { return Read(path, 16) })
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "grew past the 16-byte limit while it was read") {
		t.Errorf("err %v, want the growth named", err)
	}
	if data != nil {
		t.Errorf("returned %d bytes", len(data))
	}
}

// A file swapped for a named pipe after someone looked at it is refused
// by whoever opens it next, at once.
func TestReadSwappedForPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "model.py")
	regular("x = 1\n")(t, path)
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("lstat: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	fifo(t, path)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := readBounded(t, func() ([]byte, error) { return ReadIn(root, "model.py", 1<<20) }); !errors.Is(err, ErrNotRegular) {
		t.Errorf("err %v, want ErrNotRegular", err)
	}
}

func TestKind(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path, want string
	}{{"/dev/zero", "a character device"}, {"/", "a directory"}, {"/proc/self/maps", "a regular file"}} {
		st, err := os.Stat(tt.path)
		if err != nil {
			t.Skip(err)
		}
		if got := Kind(st.Mode()); got != tt.want {
			t.Errorf("Kind(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
