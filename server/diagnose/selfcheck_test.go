package diagnose

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// torch's own code names only flags its config modules define and uses
// them as torch intends: checking torch 2.11's compiler packages against
// their own catalog must find nothing but alias hints (torch still uses
// some old names itself), and must not fail on any file.
func TestTorchOwnCodeIsClean(t *testing.T) {
	s := torch211(t)
	n := 0
	for _, pkg := range []string{"_inductor", "_dynamo", "_functorch"} {
		root := filepath.Join(s.dir, "torch", pkg)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") {
				return err
			}
			n++
			for _, d := range check(s, readFile(t, path)) {
				if d.Code != CodeFlagAlias {
					rel, _ := filepath.Rel(s.dir, path)
					t.Errorf("%s:%d: %s", rel, d.Span.Start.Line+1, d.Message)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 100 {
		t.Errorf("checked only %d files", n)
	}
}
