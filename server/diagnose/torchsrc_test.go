package diagnose

import (
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/internal/torchtree"
)

// A torch file of the mirror that is not a plain file of at most the
// mirror's per-file limit (a named pipe, a link to /dev/zero, a huge
// file) cites no lines: it is refused at once, never waited on or read
// into memory.
func TestSiteFilesForged(t *testing.T) {
	t.Parallel()
	const rel = "torch/__init__.py"
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		lines bool
	}{
		{"regular file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("def compile(model):\n    pass\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"named pipe", plant.FIFO, false},
		{"link to /dev/zero", plant.DevZero, false},
		{"sparse file over the bound", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("def compile(model):\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, torchtree.MaxFileBytes+1); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, path)
			done := make(chan struct{})
			go func() {
				defer close(done)
				s := newSiteFiles(dir)
				if got := s.find(rel, 0, "def compile("); (got == 0) != tt.lines {
					t.Errorf("find = %d, lines read: %v", got, tt.lines)
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
