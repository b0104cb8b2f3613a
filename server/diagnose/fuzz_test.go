package diagnose

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// maxFuzzSource is the largest text FuzzCheck checks. A parse of n bytes
// may take syntax.CPULimit(n) (0.38 s at 64 KiB) when tree-sitter's error
// recovery is quadratic on it: larger inputs would pass the time
// fuzzdeadline gives an input on that bound alone.
const maxFuzzSource = 64 << 10

// FuzzCheck feeds arbitrary text (seeded with the fixtures and the case
// archives' files) to Check and FlagRefs, on the fixture torch and on one
// with every field hazard's shape: they must not panic, and every span,
// of a diagnostic and of its fixes' edits, must lie inside the text.
func FuzzCheck(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	files, _ := filepath.Glob("testdata/*/*.py")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	archives, _ := filepath.Glob("testdata/cases/*.txtar")
	for _, p := range archives {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, part := range fileMarker.Split(string(b), -1)[1:] {
			f.Add([]byte(part))
		}
	}
	sites := []site{fixture(f), overlaySite(f, "hazards-ctxvar", fixtureSite, "shipped", "ctxvar")}
	f.Fuzz(func(t *testing.T, src []byte) {
		deadline.Start(t, src)
		if len(src) > maxFuzzSource {
			t.Skipf("%d bytes, over %d", len(src), maxFuzzSource)
		}
		buf := parse(src)
		lines := splitLines(src)
		inside := func(what string, line, col int) {
			if line < 0 || line >= len(lines) || col < 0 || col > len(lines[line]) {
				t.Fatalf("%s position %d:%d outside the text", what, line, col)
			}
		}
		for _, s := range sites {
			for _, d := range Check(buf, s.cat, Options{SiteDir: s.dir}) {
				inside(d.Code, d.Span.Start.Line, d.Span.Start.Col)
				inside(d.Code, d.Span.End.Line, d.Span.End.Col)
				for _, fix := range d.Fixes {
					for _, e := range fix.Edits {
						inside(d.Code+" fix", e.Span.Start.Line, e.Span.Start.Col)
						if e.Span.End.Line < len(lines) {
							inside(d.Code+" fix", e.Span.End.Line, e.Span.End.Col)
						}
					}
				}
			}
		}
		s := sites[0]
		for _, r := range FlagRefs(buf, s.cat) {
			inside(string(r.Spelling), r.Span.Start.Line, r.Span.Start.Col)
			inside(string(r.Spelling), r.Span.End.Line, r.Span.End.Col)
		}
	})
}
