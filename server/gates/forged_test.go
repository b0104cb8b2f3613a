package gates

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

// What a cache holds, read as hostile: a catalog cache that is a named
// pipe or a link to /dev/zero is a miss (the tree is scanned again and a
// real cache put in its place); a file of the mirror swapped for one
// fails the scan at once, naming the file.
func TestOpenForgedFiles(t *testing.T) {
	ctx := context.Background()
	want, err := Scan(ctx, fixtureSite, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fifo, zero := plant.FIFO, plant.DevZero
	tests := []struct {
		name    string
		rel     string // "" for the cache file, else a file of the tree
		plant   func(t *testing.T, path string)
		wantErr string // "" for a catalog like the scanned one
	}{
		{"cache as a named pipe", "", fifo, ""},
		{"cache as a link to /dev/zero", "", zero, ""},
		{"config module as a named pipe", "torch/_inductor/config.py", fifo, "torch/_inductor/config.py is a named pipe, not a regular file"},
		{"config module as a link to /dev/zero", "torch/_inductor/config.py", zero, "torch/_inductor/config.py is a symbolic link"},
		{"torch/__init__.py as a named pipe", "torch/__init__.py", fifo, "torch/__init__.py is a named pipe, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := copyTree(t, fixtureSite)
			cacheFile := filepath.Join(t.TempDir(), "gates.cache")
			path := cacheFile
			if tt.rel != "" {
				path = filepath.Join(site, filepath.FromSlash(tt.rel))
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			tt.plant(t, path)
			plant.Within(t, 10*time.Second, func() {
				cat, err := Open(ctx, site, cacheFile, Options{})
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
				if !reflect.DeepEqual(siteLines(cat), siteLines(want)) || !reflect.DeepEqual(cat.Modes, want.Modes) {
					t.Error("the catalog differs from a scan's")
				}
				if st, err := os.Lstat(cacheFile); err != nil || !st.Mode().IsRegular() {
					t.Errorf("Open left %v (%v) at the cache's name", st, err)
				}
				if _, err := Load(cacheFile); err != nil {
					t.Errorf("the rebuilt cache does not load: %v", err)
				}
			})
		})
	}
}
