package session

import (
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/internal/torchtree"
)

// The engine reads a mirror's files through the mirror's own per-file
// limit: torchtree's bound is remote's.
func TestMirrorFileBoundIsRemotes(t *testing.T) {
	t.Parallel()
	if got, want := int64(torchtree.MaxFileBytes), remote.DefaultMirrorLimits().MaxFileBytes; got != want {
		t.Errorf("torchtree.MaxFileBytes = %d, remote's MaxFileBytes = %d", got, want)
	}
}

// nameColumn reads a mirror's file as the cache is read: a named pipe or
// a link to /dev/zero at the name answers 0 at once.
func TestNameColumnForged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		want  int
	}{
		{"regular file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("x = 1\n\ndef relu(input):\n    pass\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 4},
		{"named pipe", plant.FIFO, 0},
		{"link to /dev/zero", plant.DevZero, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "functional.py")
			tt.plant(t, path)
			done := make(chan int, 1)
			go func() { done <- nameColumn(path, 2, "relu") }()
			select {
			case got := <-done:
				if got != tt.want {
					t.Errorf("nameColumn = %d, want %d", got, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still reading after 10s: the read blocked")
			}
		})
	}
}
