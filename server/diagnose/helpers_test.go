package diagnose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

const (
	fixtureSite = "../../testdata/site"
	aliasSite   = "testdata/aliassite"
	debianSite  = "/usr/lib/python3/dist-packages"
)

// site is a torch tree the tests check against.
type site struct {
	name string // golden file directory
	dir  string
	cat  *gates.Catalog
	// freeThreaded: the target's Python is built without the GIL.
	freeThreaded bool
}

func scanSite(t testing.TB, name, dir string) site {
	t.Helper()
	cat, err := gates.Scan(context.Background(), dir, gates.Options{})
	if err != nil {
		t.Fatalf("gates.Scan(%s): %v", dir, err)
	}
	return site{name: name, dir: dir, cat: cat}
}

func fixture(t testing.TB) site { return scanSite(t, "fixture", fixtureSite) }

// torch211 scans the torch 2.11 tree named by TORCHLSP_TORCH211_SITE.
func torch211(t testing.TB) site {
	t.Helper()
	dir := os.Getenv("TORCHLSP_TORCH211_SITE")
	if dir == "" {
		t.Skip("TORCHLSP_TORCH211_SITE not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "torch", "_inductor", "config.py")); err != nil {
		t.Skipf("no torch 2.11 tree at %s: %v", dir, err)
	}
	return scanSite(t, "torch211", dir)
}

func debian(t testing.TB) site {
	t.Helper()
	if _, err := os.Stat(filepath.Join(debianSite, "torch", "__init__.py")); err != nil {
		t.Skipf("Debian's python3-torch not installed: %v", err)
	}
	return scanSite(t, "debian", debianSite)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func check(s site, src []byte) []Diagnostic {
	return Check(pybuf.Parse(src), s.cat, Options{SiteDir: s.dir, FreeThreaded: s.freeThreaded})
}

func count(ds []Diagnostic, code string) int {
	n := 0
	for _, d := range ds {
		if d.Code == code {
			n++
		}
	}
	return n
}

// render formats diagnostics for golden files, positions 1-based.
func render(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %s %s\n  %s\n", d.Code, d.Severity, spanString(d.Span), d.Message)
		for _, r := range d.Related {
			fmt.Fprintf(&b, "  related %s:%d %s\n", r.File, r.Line+1, r.Message)
		}
		for _, f := range d.Fixes {
			fmt.Fprintf(&b, "  fix %q preferred=%v\n", f.Title, f.Preferred)
			for _, e := range f.Edits {
				fmt.Fprintf(&b, "    %s %q\n", spanString(e.Span), e.NewText)
			}
		}
	}
	return b.String()
}

func spanString(s pybuf.Span) string {
	return fmt.Sprintf("%d:%d-%d:%d", s.Start.Line+1, s.Start.Col+1, s.End.Line+1, s.End.Col+1)
}

// applyEdits applies non-overlapping edits to src.
func applyEdits(src []byte, edits []Edit) ([]byte, error) {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	off := func(p pybuf.Pos) (int, error) {
		if p.Line == len(starts) && p.Col == 0 {
			return len(src), nil
		}
		if p.Line >= len(starts) {
			return 0, fmt.Errorf("line %d past the end", p.Line)
		}
		o := starts[p.Line] + p.Col
		if o > len(src) {
			return 0, fmt.Errorf("position %v past the end", p)
		}
		return o, nil
	}
	type span struct {
		s, e int
		text string
	}
	var spans []span
	for _, e := range edits {
		s, err := off(e.Span.Start)
		if err != nil {
			return nil, err
		}
		en, err := off(e.Span.End)
		if err != nil {
			return nil, err
		}
		if en < s {
			return nil, fmt.Errorf("edit %v ends before it starts", e.Span)
		}
		spans = append(spans, span{s, en, e.NewText})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].s > spans[j].s })
	for i := 1; i < len(spans); i++ {
		if spans[i].e > spans[i-1].s {
			return nil, fmt.Errorf("edits overlap")
		}
	}
	out := append([]byte(nil), src...)
	for _, sp := range spans {
		out = append(out[:sp.s], append([]byte(sp.text), out[sp.e:]...)...)
	}
	return out, nil
}

func parse(src []byte) *pybuf.Buffer { return pybuf.Parse(src) }
