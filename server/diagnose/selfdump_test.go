package diagnose

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestSelfDump(t *testing.T) {
	s := torch211(t)
	root := filepath.Join(s.dir, "torch")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".py") {
			return err
		}
		for _, d := range check(s, readFile(t, path)) {
			rel, _ := filepath.Rel(s.dir, path)
			fmt.Printf("%s %s:%d: %s\n", d.Code, rel, d.Span.Start.Line+1, d.Message)
		}
		return nil
	})
}
