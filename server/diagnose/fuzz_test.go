package diagnose

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzCheck feeds arbitrary text (seeded with the fixtures) to Check and
// FlagRefs: they must not panic, and every span must lie inside the text.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.py")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	s := fixture(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		buf := parse(src)
		lines := splitLines(src)
		inside := func(what string, line, col int) {
			if line < 0 || line >= len(lines) || col < 0 || col > len(lines[line]) {
				t.Fatalf("%s position %d:%d outside the text", what, line, col)
			}
		}
		for _, d := range Check(buf, s.cat, Options{SiteDir: s.dir}) {
			inside(d.Code, d.Span.Start.Line, d.Span.Start.Col)
			inside(d.Code, d.Span.End.Line, d.Span.End.Col)
		}
		for _, r := range FlagRefs(buf, s.cat) {
			inside(string(r.Spelling), r.Span.Start.Line, r.Span.Start.Col)
			inside(string(r.Spelling), r.Span.End.Line, r.Span.End.Col)
		}
	})
}
