package pyindex

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// An index over a listing reads only the files resolution needs, and a
// failed read is tried again on the next request.
func TestOpenListing(t *testing.T) {
	t.Parallel()
	var files []ListedFile
	err := filepath.WalkDir(fixtureSite, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".py") || strings.HasSuffix(p, ".pyi")) {
			return err
		}
		rel, _ := filepath.Rel(fixtureSite, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, ListedFile{Path: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards reads and failNext
	reads := map[string]int{}
	failNext := true
	ix, err := OpenListing(fixtureSite, files, func(rel string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		reads[rel]++
		if failNext && rel == "torch/nn/__init__.py" {
			failNext = false
			return nil, errors.New("the link dropped")
		}
		return os.ReadFile(filepath.Join(fixtureSite, filepath.FromSlash(rel)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Files != len(files) || st.Parsed != 0 {
		t.Fatalf("stats %+v: want %d files listed, none parsed", st, len(files))
	}
	// The first resolve meets the failed read; it may fail, or read the
	// file again on another route of the same resolution (following a
	// re-export): either way the failure is not remembered.
	if r, err := ix.Resolve("torch.nn.Linear"); err == nil && !strings.HasSuffix(r.Symbol.Path, "torch/nn/modules/linear.py") {
		t.Fatalf("resolved through a file whose read failed to %+v", r.Symbol)
	}
	res, err := ix.Resolve("torch.nn.Linear")
	if err != nil {
		t.Fatalf("second resolve: %v", err)
	}
	if !strings.HasSuffix(res.Symbol.Path, "torch/nn/modules/linear.py") || res.Symbol.Kind != KindClass {
		t.Errorf("resolved to %+v", res.Symbol)
	}
	mu.Lock()
	defer mu.Unlock()
	if reads["torch/nn/__init__.py"] != 2 {
		t.Errorf("torch/nn/__init__.py read %d times, want 2 (the failure is not remembered)", reads["torch/nn/__init__.py"])
	}
	if len(reads) > 6 || len(reads) >= len(files) {
		t.Errorf("read %d of %d files for one name: %v", len(reads), len(files), reads)
	}
}
