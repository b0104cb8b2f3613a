package wsmodel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

// fixtureSite is the synthetic torch the tests check against: its
// cudagraph_trees asserts the thread's state, as torch 2.11's does.
const fixtureSite = "../../testdata/site"

func fixtureCatalog(t testing.TB) *gates.Catalog {
	t.Helper()
	cat, err := gates.Scan(context.Background(), fixtureSite, gates.Options{})
	if err != nil {
		t.Fatalf("gates.Scan: %v", err)
	}
	return cat
}

// writeArchive writes a txtar's files (all but "want" and "paths") under
// a new directory and returns it with the want section's lines and the
// paths section's (the [workspace] paths of torchlsp.toml).
func writeArchive(t *testing.T, path string) (string, []string, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var want, paths []string
	for _, f := range parseArchive(string(data)) {
		switch f.name {
		case "want":
			want = strings.Fields(strings.ReplaceAll(f.data, " TL", "_TL"))
			continue
		case "paths":
			paths = strings.Fields(f.data)
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want, paths
}

type archiveFile struct{ name, data string }

// parseArchive reads the txtar format: a comment, then "-- name --"
// lines each followed by the file's text.
func parseArchive(s string) []archiveFile {
	var out []archiveFile
	for _, line := range strings.SplitAfter(s, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			out = append(out, archiveFile{name: trimmed[3 : len(trimmed)-3]})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].data += line
		}
	}
	return out
}

func testIndexer(dir string, cat *gates.Catalog, extra ...string) *Indexer {
	return &Indexer{
		Roots: []string{dir}, Paths: ImportPaths([]string{dir}, extra),
		Parse: func(ctx context.Context, src []byte) (*pybuf.Buffer, error) { return pybuf.Parse(src), nil },
		Facts: func(b *pybuf.Buffer) diagnose.Facts {
			return diagnose.FactsOf(b, cat, diagnose.Options{SiteDir: fixtureSite})
		},
		Limits: DefaultLimits(),
	}
}

// checkAll runs each file's check with the model's verdicts, as the
// editor and `torchlsp check` do, and lists the threading codes (TL001,
// TL002, TL003, TL012, TL014) as "file:line_TL001".
func checkAll(t *testing.T, dir string, m *Model, cat *gates.Catalog) []string {
	t.Helper()
	v := m.Verdicts()
	var got []string
	for path := range m.files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ds := diagnose.Check(pybuf.Parse(src), cat, diagnose.Options{SiteDir: fixtureSite, External: v.External[path], ExternalFuncs: v.Funcs[path]})
		ds = append(ds, v.Calls[path]...)
		rel, _ := filepath.Rel(dir, path)
		for _, d := range ds {
			if code, _, _ := strings.Cut(d.Code, " "); threadCodes[code] {
				got = append(got, fmt.Sprintf("%s:%d_%s", filepath.ToSlash(rel), d.Span.Start.Line+1, code))
				if t.Failed() || testing.Verbose() {
					t.Logf("%s:%d: %s", rel, d.Span.Start.Line+1, d.Message)
					for _, r := range d.Related {
						t.Logf("    %s", r.Message)
					}
				}
			}
		}
	}
	slices.Sort(got)
	return slices.Compact(got)
}

// threadCodes are the rules that read what threads run.
var threadCodes = map[string]bool{"TL001": true, "TL002": true, "TL003": true, "TL012": true, "TL014": true}

// Each testdata/paths/*.txtar is a workspace and the TL001 findings its
// files get when checked with the model's verdicts: paths across files
// flagged at the compile and at the call, quiet cases quiet.
func TestPathsAcrossFiles(t *testing.T) {
	t.Parallel()
	cat := fixtureCatalog(t)
	archives, err := filepath.Glob("testdata/paths/*.txtar")
	if err != nil || len(archives) == 0 {
		t.Fatalf("no archives: %v", err)
	}
	for _, ar := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(ar), ".txtar"), func(t *testing.T) {
			t.Parallel()
			dir, want, paths := writeArchive(t, ar)
			m, _, err := testIndexer(dir, cat, paths...).Build(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := checkAll(t, dir, m, cat)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	}
}
