package opimpl

import (
	"context"
	"github.com/torchlsp/torchlsp/internal/plant"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// What a cache holds, read as hostile: a table cache that is a named pipe
// or a link to /dev/zero is a miss (the tree is scanned again and a real
// cache put in its place); a file of the mirror swapped for one fails the
// scan at once, naming the file. Each Open must return within 10s.
func TestOpenForgedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want, err := Scan(ctx, fixtureSite)
	if err != nil {
		t.Fatal(err)
	}
	fifo, zero := plant.FIFO, plant.DevZero
	tests := []struct {
		name    string
		rel     string // "" for the cache file, else a file of the tree
		plant   func(t *testing.T, path string)
		wantErr string // "" for a table like the scanned one
	}{
		{"cache as a named pipe", "", fifo, ""},
		{"cache as a link to /dev/zero", "", zero, ""},
		{"lowering.py as a named pipe", "torch/_inductor/lowering.py", fifo, "lowering.py is a named pipe, not a regular file"},
		{"lowering.py as a link to /dev/zero", "torch/_inductor/lowering.py", zero, "lowering.py is a symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			site := t.TempDir()
			if err := copyTree(filepath.Join(fixtureSite, "torch"), filepath.Join(site, "torch")); err != nil {
				t.Fatal(err)
			}
			cache := filepath.Join(t.TempDir(), "opimpl.bin")
			path := cache
			if tt.rel != "" {
				path = filepath.Join(site, filepath.FromSlash(tt.rel))
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			tt.plant(t, path)
			done := make(chan struct{})
			go func() {
				defer close(done)
				tab, err := Open(ctx, site, cache, nil)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Errorf("Open: err %v, want %q", err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Errorf("Open: %v", err)
					return
				}
				if !reflect.DeepEqual(tab.Impls, want.Impls) {
					t.Error("the table differs from a scan's")
				}
				if st, err := os.Lstat(cache); err != nil || !st.Mode().IsRegular() {
					t.Errorf("Open left %v (%v) at the cache's name", st, err)
				}
				if _, err := Load(cache); err != nil {
					t.Errorf("the rebuilt cache does not load: %v", err)
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
