package traceback

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/internal/fuzzdeadline"
)

// FuzzParse checks that any text parses without a panic, and that every
// ref's span lies inside its line and starts with the path it reports.
func FuzzParse(f *testing.F) {
	deadline := fuzzdeadline.New(f)
	files, _ := filepath.Glob("testdata/*/*.txt")
	for _, name := range files {
		rel, _ := filepath.Rel("testdata", name)
		f.Add(readCaptureF(f, rel))
	}
	f.Add(`File "`)
	f.Add(".py:")
	f.Add("W1201 23:05:33.428000 565 torch/x.py:1]")
	f.Fuzz(func(t *testing.T, text string) {
		deadline.Start(t, text)
		res := Parse(text, 1000)
		lines := map[int]string{}
		forLines(text, func(n int, line string) bool {
			lines[n] = line
			return true
		})
		for _, r := range res.Refs {
			line, ok := lines[r.Line]
			if !ok || r.Start < 0 || r.End > len(line) || r.Start >= r.End {
				t.Fatalf("ref %+v outside its line %q", r, line)
			}
			if r.FileLine <= 0 || len(line[r.Start:r.End]) < len(r.Path) || line[r.Start:r.Start+len(r.Path)] != r.Path {
				t.Fatalf("ref %+v: span %q", r, line[r.Start:r.End])
			}
		}
		for _, s := range res.Stacks {
			if len(s.Frames) == 0 {
				t.Fatalf("empty stack %+v", s)
			}
		}
	})
}

func readCaptureF(f *testing.F, name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return string(data)
}
