package torchtree

import (
	"errors"
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/localfile"
)

// A mirror's file that is not a plain file of at most MaxFileBytes (a
// named pipe, a link to /dev/zero or to a good file, a directory, a huge
// file) is refused by ReadFile at once, and Version reads no version from
// it; a good file is read.
func TestReadFileForged(t *testing.T) {
	t.Parallel()
	good := filepath.Join(t.TempDir(), "version.py")
	if err := os.WriteFile(good, []byte("__version__ = '2.1.0'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		plant   func(t *testing.T, path string)
		wantErr error  // nil: read
		version string // Version of a site holding it as torch/version.py
	}{
		{"regular file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("__version__ = '2.1.0'\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, "2.1.0"},
		{"named pipe", plant.FIFO, localfile.ErrNotRegular, ""},
		{"link to /dev/zero", plant.DevZero, localfile.ErrLink, ""},
		{"link to a good file", func(t *testing.T, path string) {
			if err := os.Symlink(good, path); err != nil {
				t.Fatal(err)
			}
		}, localfile.ErrLink, ""},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, localfile.ErrNotRegular, ""},
		{"sparse file over the bound", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("__version__ = '2.1.0'\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, MaxFileBytes+1); err != nil {
				t.Fatal(err)
			}
		}, localfile.ErrTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			site := t.TempDir()
			path := filepath.Join(site, "torch", "version.py")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, path)
			done := make(chan struct{})
			go func() {
				defer close(done)
				data, err := ReadFile(path)
				switch {
				case tt.wantErr == nil && (err != nil || !strings.HasPrefix(string(data), "__version__")):
					t.Errorf("ReadFile = %q, %v", data, err)
				case tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || data != nil):
					t.Errorf("ReadFile = %d bytes, %v; want %v", len(data), err, tt.wantErr)
				}
				if got := Version(site); got != tt.version {
					t.Errorf("Version = %q, want %q", got, tt.version)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("still reading after 10s: the read blocked")
			}
		})
	}
}
