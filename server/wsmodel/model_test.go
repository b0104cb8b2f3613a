package wsmodel

import (
	"context"
	"fmt"
	"io/fs"
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

// archive is a workspace written from a txtar: its directory, the want
// section's lines, the paths section's (the [workspace] paths of
// torchlsp.toml), and the torch site it is checked against: the
// fixture's, or a copy of it with the archive's "site/..." files laid
// over it.
type archive struct {
	dir         string
	want, paths []string
	site        string
}

func writeArchive(t *testing.T, path string) archive {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := archive{dir: t.TempDir(), site: fixtureSite}
	for _, f := range parseArchive(string(data)) {
		switch f.name {
		case "want":
			a.want = strings.Fields(strings.ReplaceAll(f.data, " TL", "_TL"))
			continue
		case "paths":
			a.paths = strings.Fields(f.data)
			continue
		case "overlay":
			// A torch tree of the diagnose tests laid over the site.
			if a.site == fixtureSite {
				a.site = filepath.Join(t.TempDir(), "site")
				if err := os.CopyFS(a.site, os.DirFS(fixtureSite)); err != nil {
					t.Fatal(err)
				}
			}
			for _, dir := range strings.Fields(f.data) {
				if err := copyOver(a.site, dir); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		p := filepath.Join(a.dir, filepath.FromSlash(f.name))
		if rest, ok := strings.CutPrefix(f.name, "site/"); ok {
			if a.site == fixtureSite {
				a.site = filepath.Join(t.TempDir(), "site")
				if err := os.CopyFS(a.site, os.DirFS(fixtureSite)); err != nil {
					t.Fatal(err)
				}
			}
			p = filepath.Join(a.site, filepath.FromSlash(rest))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// copyOver copies the files of dir over the tree at dst.
func copyOver(dst, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
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
	return siteIndexer(dir, fixtureSite, cat, extra...)
}

// siteIndexer is testIndexer against another torch site.
func siteIndexer(dir, site string, cat *gates.Catalog, extra ...string) *Indexer {
	return &Indexer{
		Roots: []string{dir}, Paths: ImportPaths([]string{dir}, extra),
		Parse: func(ctx context.Context, src []byte) (*pybuf.Buffer, error) { return pybuf.Parse(src), nil },
		Facts: func(b *pybuf.Buffer) diagnose.Facts {
			return diagnose.FactsOf(b, cat, diagnose.Options{SiteDir: site})
		},
		Limits: DefaultLimits(),
	}
}

// checkAll runs each file's check with the model's verdicts, as the
// editor and `torchlsp check` do, and lists the codes the model decides
// or feeds (modelCodes) as "file:line_TL001".
func checkAll(t *testing.T, dir, site string, m *Model, cat *gates.Catalog) []string {
	t.Helper()
	v := m.Verdicts()
	var got []string
	for path := range m.files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ds := diagnose.Check(pybuf.Parse(src), cat, v.For(path, diagnose.Options{SiteDir: site}))
		ds = append(ds, v.Findings[path]...)
		rel, _ := filepath.Rel(dir, path)
		for _, d := range ds {
			if code, _, _ := strings.Cut(d.Code, " "); modelCodes[code] {
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

// modelCodes are the rules that read what the model decides: what
// threads run (TL001, TL002, TL003, TL012, TL014), where a compiled
// module goes (TL015) and which calls run compiled code made in another
// file (TL011, TL016, TL017).
var modelCodes = map[string]bool{"TL001": true, "TL002": true, "TL003": true, "TL011": true, "TL012": true, "TL014": true,
	"TL015": true, "TL016": true, "TL017": true}

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
			a := writeArchive(t, ar)
			c := cat
			if a.site != fixtureSite {
				var err error
				if c, err = gates.Scan(context.Background(), a.site, gates.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			m, _, err := siteIndexer(a.dir, a.site, c, a.paths...).Build(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := checkAll(t, a.dir, a.site, m, c)
			slices.Sort(a.want)
			if !slices.Equal(got, a.want) {
				t.Errorf("got %v\nwant %v", got, a.want)
			}
		})
	}
}
