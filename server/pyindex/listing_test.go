package pyindex

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fixtureListing lists the fixture site's source files, as list_files
// would.
func fixtureListing(t *testing.T) []ListedFile {
	t.Helper()
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
	return files
}

// An index over a listing reads only the files resolution needs, and a
// failed read is tried again on the next request.
func TestOpenListing(t *testing.T) {
	t.Parallel()
	files := fixtureListing(t)
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
	}, nil)
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

// textSearchOnDisk is a TextSearch over the files themselves, as the
// helper searches them on the target; it counts its requests and what it
// was asked to read ahead.
type textSearchOnDisk struct {
	site string
	fail bool

	mu         sync.Mutex // guards searches and prefetched
	searches   int
	prefetched []string
}

func (s *textSearchOnDisk) Mentioning(ctx context.Context, words []string) ([]string, error) {
	return s.search(func(src []byte) bool { return textNames(src, words) })
}

func (s *textSearchOnDisk) Subsequence(ctx context.Context, lower string) ([]string, error) {
	q := NewSymbolQuery(lower)
	return s.search(func(src []byte) bool { return textMatches(src, q) })
}

// search counts a request and lists the files whose text match accepts.
func (s *textSearchOnDisk) search(match func([]byte) bool) ([]string, error) {
	s.mu.Lock()
	s.searches++
	s.mu.Unlock()
	if s.fail {
		return nil, errors.New("search_files: the helper is gone")
	}
	var out []string
	err := filepath.WalkDir(s.site, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if match(src) {
			rel, _ := filepath.Rel(s.site, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

func (s *textSearchOnDisk) Prefetch(ctx context.Context, rels []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefetched = append(s.prefetched, rels...)
}

// References over a listing ask the target which unread files name the
// definition, in one search a round, and read those (ahead, together) and
// what resolving them needs, not the package: the answer is the complete
// index's. A search that fails says so (ErrTextSearch), for the caller to
// ask the complete mirror.
func TestReferencesOverAListing(t *testing.T) {
	t.Parallel()
	files := fixtureListing(t)
	whole, err := Open(fixtureSite, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, qualname := range []string{"torch.nn.Linear", "torch.nn.functional.relu", "torch._inductor.config.triton"} {
		t.Run(qualname, func(t *testing.T) {
			t.Parallel()
			def, err := whole.Resolve(qualname)
			if err != nil {
				t.Fatal(err)
			}
			want, err := whole.References(context.Background(), def.Symbol, ReferenceOptions{IncludeDeclaration: true})
			if err != nil || len(want.Refs) < 2 {
				t.Fatalf("the complete index: %d references, %v", len(want.Refs), err)
			}

			var mu sync.Mutex // guards reads
			reads := map[string]int{}
			search := &textSearchOnDisk{site: fixtureSite}
			ix, err := OpenListing(fixtureSite, files, func(rel string) ([]byte, error) {
				mu.Lock()
				reads[rel]++
				mu.Unlock()
				return os.ReadFile(filepath.Join(fixtureSite, filepath.FromSlash(rel)))
			}, search)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ix.Resolve(qualname)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ix.References(context.Background(), res.Symbol, ReferenceOptions{IncludeDeclaration: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Refs) != len(want.Refs) {
				t.Fatalf("%d references, the complete index %d:\n%v\n%v", len(got.Refs), len(want.Refs), got.Refs, want.Refs)
			}
			for i := range want.Refs {
				if got.Refs[i].Path != want.Refs[i].Path || got.Refs[i].Span != want.Refs[i].Span {
					t.Errorf("reference %d: %s %v, want %s %v", i, got.Refs[i].Path, got.Refs[i].Span, want.Refs[i].Path, want.Refs[i].Span)
				}
			}
			search.mu.Lock()
			searches, prefetched := search.searches, search.prefetched
			search.mu.Unlock()
			if searches == 0 || searches > 4 {
				t.Errorf("%d searches for one query", searches)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reads) >= len(files) {
				t.Errorf("read %d of %d files: %v", len(reads), len(files), reads)
			}
			for _, rel := range prefetched {
				if reads[rel] == 0 {
					t.Errorf("%s was read ahead, then not read", rel)
				}
			}
		})
	}

	failing := &textSearchOnDisk{site: fixtureSite, fail: true}
	ix, err := OpenListing(fixtureSite, files, func(rel string) ([]byte, error) {
		return os.ReadFile(filepath.Join(fixtureSite, filepath.FromSlash(rel)))
	}, failing)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Resolve("torch.nn.Linear")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.References(context.Background(), res.Symbol, ReferenceOptions{}); !errors.Is(err, ErrTextSearch) {
		t.Errorf("a failed search: %v, want ErrTextSearch", err)
	}
}

// Workspace symbols over a listing ask the target which unread files hold
// a word the query matches and read only those: the hits are the complete
// index's. A query with no name, or one whose files pass the bound, says
// ErrTextSearch (the complete mirror answers it).
func TestSymbolsOverAListing(t *testing.T) {
	t.Parallel()
	files := fixtureListing(t)
	whole, err := Open(fixtureSite, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	listing := func(search *textSearchOnDisk, reads map[string]int, mu *sync.Mutex) *Index {
		ix, err := OpenListing(fixtureSite, files, func(rel string) ([]byte, error) {
			mu.Lock()
			reads[rel]++
			mu.Unlock()
			return os.ReadFile(filepath.Join(fixtureSite, filepath.FromSlash(rel)))
		}, search)
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	for _, query := range []string{"Linear", "relu", "nn.Linear", "cgt", "get_obj"} {
		t.Run(query, func(t *testing.T) {
			t.Parallel()
			want, err := whole.Symbols(context.Background(), NewSymbolQuery(query), 100)
			if err != nil || len(want) == 0 {
				t.Fatalf("the complete index: %v, %v", want, err)
			}
			var mu sync.Mutex // guards reads
			reads := map[string]int{}
			ix := listing(&textSearchOnDisk{site: fixtureSite}, reads, &mu)
			got, err := ix.Symbols(context.Background(), NewSymbolQuery(query), 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d hits, the complete index %d:\n%v\n%v", len(got), len(want), got, want)
			}
			for i := range want {
				if got[i].Symbol.Qualname != want[i].Symbol.Qualname || got[i].Symbol.Path != want[i].Symbol.Path || got[i].Rank != want[i].Rank {
					t.Errorf("hit %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reads) >= len(files) {
				t.Errorf("read %d of %d files: %v", len(reads), len(files), reads)
			}
		})
	}
	var mu sync.Mutex
	ix := listing(&textSearchOnDisk{site: fixtureSite}, map[string]int{}, &mu)
	if _, err := ix.Symbols(context.Background(), NewSymbolQuery("torch.nn."), 100); !errors.Is(err, ErrTextSearch) {
		t.Errorf("a query with no name: %v, want ErrTextSearch", err)
	}
	ix.maxSearchRead = 100
	if _, err := ix.Symbols(context.Background(), NewSymbolQuery("Linear"), 100); !errors.Is(err, ErrTextSearch) {
		t.Errorf("a query past the bound: %v, want ErrTextSearch", err)
	}
}
